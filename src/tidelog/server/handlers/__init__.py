"""One module per API. Each declares `ROUTE` (its API key from `ApiKey`, the versions it serves,
its codec) around a module-level `handle(deps, ctx, request)`, and `Deps`: a frozen dataclass of
the broker parts the handler uses (the partitions, the cluster view, the group coordinator...),
each field named as the broker's attribute. `register_all`, called by the composition root
(server/broker.py), builds each module's `Deps` from the broker's parts and binds the handler to
it, so a handler reaches nothing else: mypy checks its body against its `Deps`, and
tests/arch/test_handler_deps.py checks that each field is the broker part of that name and type.

Adding an API is adding a module here (and its authorization rule): ApiVersions advertises
exactly what is routed.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..broker import Broker


def modules() -> list[ModuleType]:
    """Every handler module, in module name order."""
    out = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            out.append(importlib.import_module(f"{__name__}.{info.name}"))
    return out


def deps_for(module: ModuleType, broker: Broker) -> Any:
    """The module's `Deps`, each field the broker's part of that name."""
    cls = module.Deps
    return cls(**{f.name: getattr(broker, f.name) for f in dataclasses.fields(cls)})


def register_all(broker: Broker) -> None:
    for module in modules():
        route = module.ROUTE
        broker.router.add(dataclasses.replace(route, handle=bound(module, broker)))


def bound(module: ModuleType, broker: Broker) -> Any:
    """The module's handler bound to its `Deps` as `register_all` binds it (handler unit tests)."""
    return functools.partial(module.handle, deps_for(module, broker))
