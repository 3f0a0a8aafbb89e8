"""PURE: spec + plan → the Kubernetes objects the operator applies. No client, no I/O.

The names below load on first use: ``tokenscale plan`` checks the derived object names
(:mod:`tokenscale.render.names`) without loading the renderers and the scaling engine.
"""

from typing import TYPE_CHECKING

from tokenscale.lazy_names import loader

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


__getattr__ = loader(__name__, _HOME)
