"""The pure capacity planner: spec in, explainable :class:`Plan` out. No I/O, no clock."""

from tokenscale.planning.planner import plan_service, predict_tpot
from tokenscale.planning.result import Plan
from tokenscale.planning.sweep import SweepRow, sweep

__all__ = ["Plan", "SweepRow", "plan_service", "predict_tpot", "sweep"]
