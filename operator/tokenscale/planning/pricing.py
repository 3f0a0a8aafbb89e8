"""Cost figures: ``cost_per_1M = hourly_cost / (tokens_per_s × 3600) × 1e6`` per replica."""

from dataclasses import dataclass

from tokenscale.api.cost import Cost
from tokenscale.planning.formulas import cost_per_million_tokens


@dataclass(frozen=True)
class Pricing:
    gpu_hour_price: float | None

    @classmethod
    def for_gpu(cls, cost: Cost, gpu_key: str) -> "Pricing":
        if gpu_key in cost.gpu_hour_prices:
            return cls(cost.gpu_hour_prices[gpu_key])
        return cls(cost.gpu_hour_price)


@dataclass(frozen=True)
class Costs:
    gpu_hours_per_million_output_tokens: float | None
    fleet_cost_per_hour: float | None
    per_million_output: float | None
    per_million_input: float | None
    per_million_blended: float | None
    per_request: float | None


def price_plan(
    pricing: Pricing,
    tp: int,
    replicas: int,
    output_tps_per_replica: float,
    input_tps_per_replica: float,
    rps_per_replica: float,
) -> Costs:
    """Per-replica unit costs at the operating point, and the fleet's hourly cost."""
    gpu_hours = (
        cost_per_million_tokens(float(tp), output_tps_per_replica)
        if output_tps_per_replica > 0
        else None
    )
    price = pricing.gpu_hour_price
    if price is None or output_tps_per_replica <= 0:
        return Costs(gpu_hours, None, None, None, None, None)
    hourly = price * tp
    return Costs(
        gpu_hours_per_million_output_tokens=gpu_hours,
        fleet_cost_per_hour=hourly * replicas,
        per_million_output=cost_per_million_tokens(hourly, output_tps_per_replica),
        per_million_input=cost_per_million_tokens(hourly, input_tps_per_replica),
        per_million_blended=cost_per_million_tokens(
            hourly, input_tps_per_replica + output_tps_per_replica
        ),
        per_request=hourly / (rps_per_replica * 3600.0),
    )
