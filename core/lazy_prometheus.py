"""prometheus_client without its package `__init__` until something needs it.

`import prometheus_client.metrics_core` first runs the package's `__init__`, which imports
the HTTP server, WSGI, ssl, urllib and three default collectors: 8 MiB of private memory in
every sentinel, though a sentinel only builds metric families and writes a textfile
(core/spool.py renders simple families itself). `install()` puts the real package module in
`sys.modules` with its `__path__` but without running its `__init__`, so its submodules
(`metrics_core`, `utils`, `parser`) load on their own; the first attribute asked of the
package itself (`from prometheus_client import generate_latest`) runs the `__init__` then,
into the same module object (PEP 562 `__getattr__`), so nothing behaves differently.

`defer(name)` does the same for any module: the standard library's `inspect` (with `ast`,
`dis` and `tokenize`, 0.8 MiB in every process) is imported by `dataclasses` only to write a
docstring for a dataclass declared without one, so in a process whose dataclasses all have
one it is never loaded. (importlib.util.LazyLoader cannot do this on Python 3.11: the import
statement itself reads the module's `__spec__`, which loads it.)"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

NAME = "prometheus_client"


def install() -> None:
    """Make `prometheus_client` lazy in this process; a no-op once it is imported."""
    defer(NAME)


def defer(name: str) -> None:
    """Make the module `name` load on the first attribute asked of it; a no-op once imported."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return  # not installed: the import that needs it will say so
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def load_on_demand(attribute: str) -> object:
        del package.__dict__["__getattr__"]
        loader.exec_module(package)  # the real module, into this module object
        try:
            return package.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    package.__dict__["__getattr__"] = load_on_demand
    sys.modules[name] = package


def is_loaded(module: ModuleType | None = None, name: str = NAME) -> bool:
    """Whether the package's `__init__` (a deferred module's code) has run (tests ask)."""
    package = module or sys.modules.get(name)
    return package is not None and "__getattr__" not in package.__dict__
