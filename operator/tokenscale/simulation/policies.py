"""Scaling policies compared by the simulator. Each maps (now, snapshot) → replicas asked for.

- ``tokenscale``: the operator's decision engine driven by the operator's own stepper
  (``scaling/stepper.py``: one decision per observation, the real time between them), its
  state carried from one decision to the next as the operator keeps it in status.
- ``oracle``: the hindsight allocation of ``capacity.oracle_replicas`` (per bin, the replicas
  the bin's arrivals need at the simulated replica's sustainable rate), replayed with no cold
  start: the yardstick's own SLO attainment is measured, not assumed.
- ``oracle-lead-time``: the same hindsight need, but each added replica asked for one cold
  start (plus one decision interval, so a decision falls in time) before the bin it serves
  (``capacity.lead_time_replicas_at``), replayed with the cold start: the fewest GPU-hours a
  policy that knew the future but had to start pods could spend.
- ``best-static``: the smallest fixed count meeting ``spec.scaling.targetAttainment`` (0.99),
  found by bisection over replayed static fleets (``run.best_static``).
- ``static``: static-at-peak, the plan at the trace's peak (1-minute peak RPS, the trace's
  token statistics), fixed for the whole run.
- ``queue-threshold``: KEDA's Prometheus scaler on ``sum(vllm:num_requests_waiting)`` with an
  ``AverageValue`` target per replica, driven by the HPA algorithm.
- ``kv-threshold``: an HPA utilisation target on ``vllm:kv_cache_usage_perc`` (mean over ready
  engines).

The two threshold policies follow the HPA algorithm (``desired = ceil(ready × metric /
target)``, skipped within a 10 % tolerance; scale-up at most ``max(4, 100 %)`` per decision;
scale-down to the highest recommendation of the last 300 s, the default stabilisation
window); no metrics → keep the current count, as the HPA does.
"""

import math
from collections import deque
from typing import Literal, Protocol

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import Plan
from tokenscale.scaling.decision import Decision
from tokenscale.scaling.snapshot import Snapshot
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.stepper import Observation, Stepper
from tokenscale.simulation.capacity import lead_time_replicas_at

PolicyName = Literal[
    "tokenscale",
    "oracle",
    "oracle-lead-time",
    "best-static",
    "static",
    "queue-threshold",
    "kv-threshold",
]
POLICIES: tuple[PolicyName, ...] = (
    "tokenscale",
    "oracle",
    "oracle-lead-time",
    "best-static",
    "static",
    "queue-threshold",
    "kv-threshold",
)


class Policy(Protocol):
    name: str
    last_reason: str
    """The whole sentence of the last decision."""
    last_why: str
    """Its numbers alone, without the verb and counts (what a plot annotates)."""

    def decide(self, now: float, snap: Snapshot | None, current: int) -> int: ...


class TokenscalePolicy:
    name = "tokenscale"

    def __init__(
        self,
        spec: InferenceServiceSpec,
        forecast: Plan,
        stale_after_s: float,
        interval_s: float,
    ) -> None:
        self.stepper = Stepper(spec, forecast, interval_s, stale_after_s)
        self.state = ScalingState(decided_replicas=forecast.sized.total)
        self.last_reason = ""
        self.last_why = ""
        self.lead_time_s: float | None = None
        """Set by the simulator from the fleet, as the operator measures it from its pods."""
        self.last: Decision | None = None

    @property
    def spec(self) -> InferenceServiceSpec:
        return self.stepper.spec

    @property
    def forecast(self) -> Plan:
        return self.stepper.forecast

    def decide(self, now: float, snap: Snapshot | None, current: int) -> int:
        """One observation (the snapshot Prometheus answers at ``now``), one step."""
        step = self.stepper.step(self.state, Observation(now, snap), now, self.lead_time_s)
        self.state = step.state
        if step.decision is not None:
            self.last = step.decision
            self.last_reason = step.decision.reason
            self.last_why = step.decision.why
        return self.state.decided_replicas if self.state.decided_replicas is not None else current


class StaticPolicy:
    name = "static"

    def __init__(self, replicas: int, why: str = "the plan at the trace's peak") -> None:
        self.replicas = replicas
        self.last_reason = f"static: {why}, {replicas} replicas"
        self.last_why = why

    def decide(self, now: float, snap: Snapshot | None, current: int) -> int:
        return self.replicas


class OraclePolicy:
    """Hindsight: the replicas each ``bin_s`` bin of the trace needs, set at the bin's start."""

    name = "oracle"

    def __init__(self, schedule: list[int], bin_s: float) -> None:
        self.schedule = schedule
        self.bin_s = bin_s
        self.last_reason = ""
        self.last_why = ""

    def replicas_at(self, t: float) -> int:
        return self.schedule[min(len(self.schedule) - 1, max(0, int(t // self.bin_s)))]

    def decide(self, now: float, snap: Snapshot | None, current: int) -> int:
        out = self.replicas_at(now)
        self.last_why = f"this bin's arrivals need {out}"
        self.last_reason = f"oracle: {self.last_why}"
        return out


class LeadTimeOraclePolicy:
    """Hindsight with pod starts: at ``now``, the need of this bin and of every bin starting
    within ``lookahead_s`` (the cold start plus one decision interval)."""

    name = "oracle-lead-time"

    def __init__(self, schedule: list[int], bin_s: float, lookahead_s: float) -> None:
        self.schedule = schedule
        self.bin_s = bin_s
        self.lookahead_s = lookahead_s
        self.last_reason = ""
        self.last_why = ""

    def replicas_at(self, t: float) -> int:
        return lead_time_replicas_at(self.schedule, self.bin_s, self.lookahead_s, t)

    def decide(self, now: float, snap: Snapshot | None, current: int) -> int:
        out = self.replicas_at(now)
        self.last_why = f"the bins of the next {self.lookahead_s:.0f} s need {out}"
        self.last_reason = f"oracle-lead-time: {self.last_why}"
        return out


class HpaPolicy:
    """The Kubernetes HPA algorithm over one per-replica metric (see the module docstring)."""

    TOLERANCE = 0.1
    DOWN_WINDOW_S = 300.0

    def __init__(
        self,
        name: str,
        metric: Literal["waiting", "kv_usage"],
        target: float,
        min_replicas: int,
        max_replicas: int,
    ) -> None:
        self.name = name
        self.metric = metric
        self.target = target
        self.min_replicas = max(1, min_replicas)
        self.max_replicas = max_replicas
        self._history: deque[tuple[float, int]] = deque()
        self.last_reason = ""
        self.last_why = ""

    def _value(self, snap: Snapshot) -> float | None:
        if self.metric == "waiting":
            return None if snap.waiting is None else snap.waiting / snap.replicas_reporting
        return snap.kv_usage_mean

    def decide(self, now: float, snap: Snapshot | None, current: int) -> int:
        value = None if snap is None or snap.replicas_reporting == 0 else self._value(snap)
        if snap is None or value is None:
            self.last_reason = self.last_why = "no metrics: keep the current count"
            return current
        ratio = value / self.target
        ready = snap.replicas_reporting
        raw = current if abs(ratio - 1.0) <= self.TOLERANCE else math.ceil(ready * ratio - 1e-9)
        raw = min(max(raw, self.min_replicas), self.max_replicas)
        self._history.append((now, raw))
        while self._history and self._history[0][0] < now - self.DOWN_WINDOW_S:
            self._history.popleft()
        if raw > current:
            out = min(raw, max(current + 4, 2 * current))
        else:
            out = min(current, max(r for _, r in self._history))
        self.last_reason = self.last_why = (
            f"{self.metric} {value:.3g} vs target {self.target:g} → {out}"
        )
        return out
