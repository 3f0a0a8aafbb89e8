"""PURE: plan (+ live observations, later) → how many replicas, and why."""

from tokenscale.scaling.decision import Decision, decide_plan_only

__all__ = ["Decision", "decide_plan_only"]
