"""The pure capacity planner: spec in, explainable :class:`Plan` out. No I/O, no clock."""

from tokenscale.planning.conditions import Calibration, Conditions, forecast_conditions
from tokenscale.planning.parallel import Layout
from tokenscale.planning.performance import PerfModel
from tokenscale.planning.planner import (
    layout_of,
    perf_at,
    plan_at,
    predicted_step,
    replica_perf_model,
)
from tokenscale.planning.resolve import Resolved, resolve
from tokenscale.planning.result import Plan
from tokenscale.planning.service import plan_service
from tokenscale.planning.sweep import SweepRow, sweep

__all__ = [
    "Calibration",
    "Conditions",
    "Layout",
    "PerfModel",
    "Plan",
    "Resolved",
    "SweepRow",
    "forecast_conditions",
    "layout_of",
    "perf_at",
    "plan_at",
    "plan_service",
    "predicted_step",
    "replica_perf_model",
    "resolve",
    "sweep",
]
