"""PURE: plan + live observations + history + now → how many replicas, and why."""

from tokenscale.scaling.decision import Decision, Signal, decide_plan_only
from tokenscale.scaling.engine import EngineInput, decide
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState

__all__ = [
    "Decision",
    "EngineInput",
    "ScalingState",
    "Signal",
    "Snapshot",
    "decide",
    "decide_plan_only",
]
