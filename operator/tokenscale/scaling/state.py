"""What the engine remembers between decisions (kept in status, so restarts lose nothing)."""

from pydantic import BaseModel, ConfigDict

from tokenscale.scaling.forecast import RateForecast


class ScalingState(BaseModel):
    """Unix seconds for times; the calibration factor scales the planner's efficiencies."""

    model_config = ConfigDict(frozen=True)

    decided_replicas: int | None = None
    low_since_s: float | None = None
    peak_load: float = 0.0
    """Recent peak of the fleet's load in replicas-at-the-high-watermark
    (``max(value / high) × replicas reporting``), decaying with a half-life of two scale-down
    windows; a step down to ``target`` needs ``peak_load / target < 1``."""
    peak_at_s: float | None = None
    pressure_since_s: float | None = None
    last_scale_s: float | None = None
    calibration: float = 1.0
    """Decode: predicted ÷ observed TPOT (scales the decode efficiencies)."""
    prefill_calibration: float = 1.0
    """Prefill: predicted ÷ observed prefill phase (TTFT − queue; scales prefill efficiency)."""
    rate: RateForecast | None = None
    """The arrival-rate smoother (level, trend, dispersion) behind the forecast."""
    slo_headroom: float = 1.0
    """Standing headroom learned from SLO breaches (``scaling/headroom.py``): × the model."""
    slo_headroom_raised_s: float | None = None
    """When a breach last raised it (one raise per ``RAISE_INTERVAL_S``)."""
    backlog_at_s: float | None = None
    """The last decision that saw the queue over its high mark (seen twice: not a burst)."""
