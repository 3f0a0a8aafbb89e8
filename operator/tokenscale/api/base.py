"""The base every API model derives from: frozen, camelCase in YAML, snake_case in Python."""

from pydantic import BaseModel, ConfigDict

_UNITS = {"gib": "GiB", "gbps": "GBps"}


def to_camel(snake: str) -> str:
    """``e2e_p99_seconds`` → ``e2eP99Seconds``; unit words keep their spelling
    (``memory_gib`` → ``memoryGiB``, ``hbm_bandwidth_gbps`` → ``hbmBandwidthGBps``)."""
    head, *rest = snake.split("_")
    return head + "".join(_UNITS.get(part, part[:1].upper() + part[1:]) for part in rest)


class ApiModel(BaseModel):
    """Frozen, strict about unknown fields (a typo is an error, not a silent default)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
    )
