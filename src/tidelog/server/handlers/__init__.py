"""One module per API. Each exposes `register(broker)`, adding its route to `broker.router`.

Modules are discovered, so adding an API is adding a module here; a module whose subsystem is not
available may simply not register (ApiVersions then does not advertise it).
"""

from __future__ import annotations

import importlib
import logging
import pkgutil

log = logging.getLogger("tidelog.server")


def register_all(broker) -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(broker)
