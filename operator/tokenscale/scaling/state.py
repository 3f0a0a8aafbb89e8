"""What the engine remembers between decisions (kept in status, so restarts lose nothing)."""

from pydantic import BaseModel, ConfigDict


class ScalingState(BaseModel):
    """Unix seconds for times; the calibration factor scales the planner's efficiencies."""

    model_config = ConfigDict(frozen=True)

    decided_replicas: int | None = None
    low_since_s: float | None = None
    low_peak_ratio: float = 0.0
    """Highest value/high-watermark seen while every signal was low (projected before a step)."""
    pressure_since_s: float | None = None
    last_scale_s: float | None = None
    calibration: float = 1.0
