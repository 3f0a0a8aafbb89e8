"""PURE: does the live object still carry everything we rendered? (drift detection)

``desired ⊆ live``: every field we set must be present with the same value; fields the API
server adds (defaults, status, managedFields) are ignored. Lists compare element-wise, so an
added, removed or reordered argument is drift. Quantities compare by value ("1Gi" == "1024Mi").
"""

from decimal import Decimal, InvalidOperation
from typing import Any

_SUFFIX: dict[str, Decimal] = {
    **{k: Decimal(2) ** (10 * n) for n, k in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1)},
    **{k: Decimal(10) ** (3 * n) for n, k in enumerate(("k", "M", "G", "T", "P", "E"), 1)},
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
}


def _quantity(value: str) -> Decimal | None:
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if value.endswith(suffix):
            number = value[: -len(suffix)]
            try:
                return Decimal(number) * _SUFFIX[suffix]
            except InvalidOperation:
                return None
    try:
        return Decimal(value)
    except InvalidOperation:
        return None


def _same_scalar(want: Any, have: Any) -> bool:
    if want == have:
        return True
    if isinstance(want, str) and isinstance(have, str | int | float):
        a, b = _quantity(want), _quantity(str(have))
        return a is not None and a == b
    return False


def differences(desired: Any, live: Any, path: str = "") -> list[str]:
    """Paths where ``live`` no longer carries what ``desired`` says (empty: in sync)."""
    if desired in ({}, []) and live is None:
        return []  # the API server omits empty lists and maps
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return [path or "."]
        out: list[str] = []
        for key, value in desired.items():
            out.extend(differences(value, live.get(key), f"{path}.{key}"))
        return out
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return [path]
        out = []
        for i, (want, have) in enumerate(zip(desired, live, strict=True)):
            out.extend(differences(want, have, f"{path}[{i}]"))
        return out
    return [] if _same_scalar(desired, live) else [path]
