"""Names and label values of the rendered objects, always valid whatever the service is called.

An InferenceService name is a DNS-1123 subdomain (up to 253 characters, dots allowed), but its
Service must be a DNS-1035 label (63 characters, a letter first, no dots) and a label value is at
most 63 characters. A name that already fits is used as it is (so existing objects keep their
names); any other is derived: lowercased, characters outside ``[a-z0-9-]`` become ``-``, a
leading digit gets an ``is-`` prefix, and the result is cut to leave room for ``-`` and 8 hex
characters of the name's sha256, so two long names that share a prefix stay distinct.
"""

import hashlib
import re

from tokenscale.api.k8s_names import LABEL_MAX, is_dns1035_label, is_label_value

_HASH_CHARS = 8
_INVALID = re.compile(r"[^a-z0-9-]+")


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:_HASH_CHARS]


def child_name(name: str) -> str:
    """The name of the Deployment, Service and PDB of service ``name``: a DNS-1035 label."""
    if is_dns1035_label(name):
        return name
    base = _INVALID.sub("-", name.lower()).strip("-")
    if not base or not base[0].isalpha():
        base = f"is-{base}".rstrip("-")
    base = base[: LABEL_MAX - _HASH_CHARS - 1].rstrip("-")
    return f"{base}-{_digest(name)}"


def label_value(name: str) -> str:
    """``name`` as a label value: itself when it fits, else the derived child name."""
    return name if is_label_value(name) else child_name(name)


def derived_names(name: str) -> list[str]:
    """Human-readable notes on what was derived for ``name`` (empty when nothing was)."""
    notes: list[str] = []
    child = child_name(name)
    if child != name:
        notes.append(
            f"metadata.name {name!r} is not a valid Service name (at most 63 lowercase letters, "
            f"digits and '-', starting with a letter); the Deployment, Service and "
            f"PodDisruptionBudget are named {child!r}"
        )
    value = label_value(name)
    if value != name:
        notes.append(
            f"metadata.name {name!r} is not a valid label value (at most 63 characters); "
            f"the pods are labelled {value!r}"
        )
    return notes
