"""PURE: spec + plan → the Kubernetes objects the operator applies. No client, no I/O.

The names below load on first use: ``tokenscale plan`` checks the derived object names
(:mod:`tokenscale.render.names`) without loading the renderers and the scaling engine.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenscale.render.bundle import Owner, RenderedBundle, render_bundle
    from tokenscale.render.labels import selector_labels, selector_string
    from tokenscale.render.names import child_name, derived_names

_HOME = {
    "Owner": "bundle",
    "RenderedBundle": "bundle",
    "render_bundle": "bundle",
    "selector_labels": "labels",
    "selector_string": "labels",
    "child_name": "names",
    "derived_names": "names",
}

__all__ = [
    "Owner",
    "RenderedBundle",
    "child_name",
    "derived_names",
    "render_bundle",
    "selector_labels",
    "selector_string",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
