"""The base every API model derives from: frozen, camelCase in YAML, snake_case in Python.

Every model is strict: a number must be a number (``true`` is not 1, ``4096.5`` is not an
integer count, ``"8"`` is not 8) and never ``NaN`` or infinite; the ``MAX_*`` bounds below keep
finite-but-absurd values (``1e308`` requests per second) out of the arithmetic.
"""

from pydantic import BaseModel, ConfigDict

_UNITS = {"gib": "GiB", "gbps": "GBps"}

#: Largest replica count any bound or pin may name (far beyond any fleet; int32-safe).
MAX_REPLICAS = 100_000
#: Longest context or per-request token count the planner accepts (10 M tokens).
MAX_TOKENS = 10_000_000
#: Largest request rate the planner accepts, requests per second.
MAX_RPS = 1_000_000.0
#: Longest duration any latency objective or timing may name, seconds (one day).
MAX_SECONDS = 86_400.0
#: Largest parameter count (100 T).
MAX_PARAMS = 1e14
#: Largest price of one GPU-hour.
MAX_PRICE = 1_000_000.0
#: Largest memory figure in GiB (per GPU or per pod).
MAX_GIB = 16_384.0


def to_camel(snake: str) -> str:
    """``e2e_p99_seconds`` → ``e2eP99Seconds``; unit words keep their spelling
    (``memory_gib`` → ``memoryGiB``, ``hbm_bandwidth_gbps`` → ``hbmBandwidthGBps``)."""
    head, *rest = snake.split("_")
    return head + "".join(_UNITS.get(part, part[:1].upper() + part[1:]) for part in rest)


class ApiModel(BaseModel):
    """Frozen, strict about unknown fields (a typo is an error, not a silent default) and about
    types (no coercion), finite numbers only."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
        strict=True,
        allow_inf_nan=False,
    )
