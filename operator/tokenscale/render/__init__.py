"""PURE: spec + plan → the Kubernetes objects the operator applies. No client, no I/O."""

from tokenscale.render.bundle import Owner, RenderedBundle, render_bundle
from tokenscale.render.labels import selector_labels, selector_string

__all__ = ["Owner", "RenderedBundle", "render_bundle", "selector_labels", "selector_string"]
