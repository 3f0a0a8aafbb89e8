"""The base every API model derives from: frozen, camelCase in YAML, snake_case in Python."""

from pydantic import BaseModel, ConfigDict


def to_camel(snake: str) -> str:
    """``e2e_p99_seconds`` → ``e2eP99Seconds`` (pydantic's own helper capitalises after digits)."""
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class ApiModel(BaseModel):
    """Frozen, strict about unknown fields (a typo is an error, not a silent default)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        validate_default=True,
    )
