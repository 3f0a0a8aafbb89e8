"""Names a package exports, loaded from their modules on first use (PEP 562).

``tokenscale plan`` imports :mod:`tokenscale.render` (the derived object names) and
:mod:`tokenscale.scaling` (a day of schedule windows) without loading the renderers or the
decision engine: each package's ``__init__`` maps its exported names to the module that
defines them and hands this loader to Python as its ``__getattr__``.
"""

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def loader(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``homes`` maps an exported name to the
    submodule that defines it; the value is kept on the package after the first use."""

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{home}"), name)
        setattr(import_module(package), name, value)
        return value

    return load
