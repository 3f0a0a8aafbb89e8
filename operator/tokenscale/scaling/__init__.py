"""PURE: plan + live observations + history + now → how many replicas, and why.

The names below load on first use: ``tokenscale plan`` costs a day of schedule windows
(:mod:`tokenscale.scaling.schedule_day`) without loading the decision engine.
"""

from typing import TYPE_CHECKING

from tokenscale.lazy_names import loader

if TYPE_CHECKING:
    from tokenscale.scaling.decision import Decision, Signal, decide_plan_only
    from tokenscale.scaling.engine import EngineInput, decide
    from tokenscale.scaling.snapshot import Snapshot
    from tokenscale.scaling.state import ScalingState

_HOME = {
    "Decision": "decision",
    "Signal": "decision",
    "decide_plan_only": "decision",
    "EngineInput": "engine",
    "decide": "engine",
    "Snapshot": "snapshot",
    "ScalingState": "state",
}

__all__ = [
    "Decision",
    "EngineInput",
    "ScalingState",
    "Signal",
    "Snapshot",
    "decide",
    "decide_plan_only",
]


__getattr__ = loader(__name__, _HOME)
