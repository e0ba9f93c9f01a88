"""One module per API. Each declares `ROUTE` (its API key from `ApiKey`, the versions it serves,
its codec) around a module-level `handle(broker, ctx, request)`; `register_all` binds each
handler to the broker (the composition root, whose parts the handler uses) and adds the route.

Adding an API is adding a module here (and its authorization rule): ApiVersions advertises
exactly what is routed.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..broker import Broker
    from ..router import Route


def routes() -> list[Route]:
    """Every handler module's route declaration, in module name order."""
    out = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        out.append(module.ROUTE)
    return out


def register_all(broker: Broker) -> None:
    for route in routes():
        broker.router.add(dataclasses.replace(route, handle=functools.partial(route.handle, broker)))
