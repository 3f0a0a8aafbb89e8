"""Kubernetes resource quantities (``4``, ``500m``, ``16Gi``, ``1e3``): parse and compare."""

import re
from decimal import Decimal, InvalidOperation

_SUFFIX: dict[str, Decimal] = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[mkMGTPE]i?)?$")


def parse_quantity(text: str) -> Decimal:
    """The value of a quantity; ``ValueError`` naming the allowed form otherwise."""
    match = _QUANTITY.match(text.strip()) if len(text) <= 64 else None
    if match is None:
        raise ValueError(
            f"{text!r} is not a Kubernetes quantity; use a number with an optional suffix "
            "(500m, 4, 16Gi, 1G)"
        )
    try:
        number = Decimal(match.group(1))
    except InvalidOperation as exc:
        raise ValueError(
            f"{text!r} is not a Kubernetes quantity; use e.g. 4, 500m or 16Gi"
        ) from exc
    if number < 0:
        raise ValueError(f"{text!r} is negative; a resource quantity must be >= 0")
    suffix = match.group(2) or ""
    if suffix in _SUFFIX:
        return number * _SUFFIX[suffix]
    exponent = int(suffix[1:])
    if abs(exponent) > 30:
        raise ValueError(f"{text!r} is out of range; use a suffix such as Gi or G")
    return number * Decimal(10) ** exponent
