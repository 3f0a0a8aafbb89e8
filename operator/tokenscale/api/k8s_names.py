"""Kubernetes' name rules (apimachinery ``validation.go``), as predicates and pydantic types.

- DNS-1123 subdomain (Secrets, PVCs, ServiceAccounts, PriorityClasses, most object names):
  ≤ 253 characters, lowercase alphanumerics, ``-`` and ``.``, alphanumeric at both ends.
- DNS-1123 label (namespaces): ≤ 63 characters, lowercase alphanumerics and ``-``.
- DNS-1035 label (Service names): a DNS-1123 label that starts with a letter.
- Label value: ≤ 63 characters, alphanumerics, ``-``, ``_``, ``.``, alphanumeric at both ends.
- Qualified name (label and annotation keys): an optional DNS-1123 subdomain prefix and ``/``,
  then a name of ≤ 63 characters like a label value (not empty).
"""

import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator

DNS1123_SUBDOMAIN_MAX = 253
LABEL_MAX = 63

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= DNS1123_SUBDOMAIN_MAX and bool(_DNS1123_SUBDOMAIN.match(value))


def is_dns1035_label(value: str) -> bool:
    return len(value) <= LABEL_MAX and bool(_DNS1035_LABEL.match(value))


def is_label_value(value: str) -> bool:
    return len(value) <= LABEL_MAX and bool(_LABEL_VALUE.match(value))


def is_qualified_name(value: str) -> bool:
    prefix, _, name = value.rpartition("/")
    if "/" in value and not (prefix and is_dns1123_subdomain(prefix)):
        return False
    return len(name) <= LABEL_MAX and bool(_QUALIFIED_NAME.match(name))


def _subdomain(value: str) -> str:
    if not is_dns1123_subdomain(value):
        raise ValueError(
            f"{value!r} is not a valid Kubernetes object name; use at most 253 lowercase "
            "letters, digits, '-' and '.', starting and ending with a letter or digit"
        )
    return value


def is_dns1123_label(value: str) -> bool:
    return len(value) <= LABEL_MAX and bool(re.match(rf"^{_DNS1123_LABEL}$", value))


def _checked(valid: Callable[[str], bool], what: str) -> Callable[[str], str]:
    """A validator that passes valid values through and refuses the rest, saying the rule."""

    def check(value: str) -> str:
        if not valid(value):
            raise ValueError(f"{value!r} is not a valid {what}")
        return value

    return check


_namespace = _checked(
    is_dns1123_label,
    "namespace; use at most 63 lowercase letters, digits and '-', starting and ending with a "
    "letter or digit",
)
_label_value = _checked(
    is_label_value,
    "label value; use at most 63 letters, digits, '-', '_' and '.', starting and ending with "
    "a letter or digit (or the empty string)",
)
_qualified = _checked(
    is_qualified_name,
    "label or annotation key; use [prefix/]name with a DNS subdomain prefix and a name of at "
    "most 63 letters, digits, '-', '_' and '.'",
)


ObjectName = Annotated[str, AfterValidator(_subdomain)]
Namespace = Annotated[str, AfterValidator(_namespace)]
LabelValue = Annotated[str, AfterValidator(_label_value)]
QualifiedName = Annotated[str, AfterValidator(_qualified)]
