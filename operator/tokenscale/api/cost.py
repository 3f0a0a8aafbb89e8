"""``spec.cost``: prices, currency-agnostic."""

from typing import Annotated

from pydantic import Field

from tokenscale.api.base import MAX_PRICE, ApiModel


class Cost(ApiModel):
    """What a GPU-hour costs. Without a price, cost figures are omitted (null) with a warning."""

    gpu_hour_price: float | None = Field(
        default=None,
        ge=0,
        le=MAX_PRICE,
        description="Price of one GPU for one hour (any currency).",
    )
    gpu_hour_prices: dict[str, Annotated[float, Field(ge=0, le=MAX_PRICE)]] = Field(
        default_factory=dict,
        description="Prices per GPU catalog key, used by `tokenscale plan --sweep`.",
    )
    currency: str = Field(default="USD", description="Label only; no conversion happens.")
