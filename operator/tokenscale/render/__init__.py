"""PURE: spec + plan → the Kubernetes objects the operator applies. No client, no I/O."""

from tokenscale.render.bundle import Owner, RenderedBundle, render_bundle
from tokenscale.render.labels import selector_labels, selector_string
from tokenscale.render.names import child_name, derived_names

__all__ = [
    "Owner",
    "RenderedBundle",
    "child_name",
    "derived_names",
    "render_bundle",
    "selector_labels",
    "selector_string",
]
