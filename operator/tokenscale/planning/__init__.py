"""The pure capacity planner: spec in, explainable :class:`Plan` out. No I/O, no clock."""

from tokenscale.planning.performance import PerfModel
from tokenscale.planning.planner import plan_service, predict_tpot, replica_perf_model
from tokenscale.planning.result import Plan
from tokenscale.planning.sweep import SweepRow, sweep

__all__ = [
    "PerfModel",
    "Plan",
    "SweepRow",
    "plan_service",
    "predict_tpot",
    "replica_perf_model",
    "sweep",
]
