"""PURE: a need just above the current count may be the arrival count's sampling error.

The model's need in replicas is read from a rate, and the rate from the requests counted in one
window: ``n`` arrivals of a Poisson stream estimate its rate with a relative standard error of
``1 / √n``. A need of 2.01 replicas read from 131 requests (1.1 RPS over 120 s: ± 8.7 % per
standard error) does not say the fleet needs a third replica; the next window says 1.97 as
readily. Scaling up on it adds half the fleet's capacity for a hundredth of a replica, and two
readers of the same traffic a request apart (the live operator and the simulator, whose windows
close a few seconds apart) decide differently at every such crossing.

So a scale-up from the model's need alone is taken only when the need is over the current
count by more than chance: ``need > current × (1 + z / √n)``, ``z`` the one-sided normal
quantile of :data:`~tokenscale.scaling.buckets.CHANCE` (1.645 at 5 %) — the confidence the
latency breach rule asks for too. The band narrows as traffic grows (20 RPS over 120 s:
± 3.4 %), it applies to scale-up only (scale-down has its own stabilisation), and pressure and
latency signals are not held by it: a fleet that really runs short says so in its queue, its
KV cache and its latency histograms. Kubernetes' HPA holds a fixed 10 % tolerance for the same
reason (``--horizontal-pod-autoscaler-tolerance``); this one is the count's own.
"""

import math

from scipy.stats import norm

from tokenscale.scaling.buckets import CHANCE
from tokenscale.scaling.snapshot import Snapshot

Z = float(norm.ppf(1.0 - CHANCE))
"""≈ 1.645: the one-sided normal quantile of :data:`CHANCE`."""


def band(arrivals: float | None) -> float | None:
    """The relative sampling error ``z / √n`` of a rate read from ``arrivals`` requests (None
    when the count is unknown or zero: no band)."""
    if arrivals is None or arrivals <= 0:
        return None
    return Z / math.sqrt(arrivals)


def arrivals_of(snap: Snapshot) -> float | None:
    """The requests the arrival rate was read from (rate × its window), when both are known."""
    if snap.arrival_rps is None or snap.rate_window_s is None:
        return None
    return snap.arrival_rps * snap.rate_window_s


def within_error(need: float, current: int, arrivals: float | None) -> bool:
    """Whether ``need`` replicas, above ``current``, are within the sampling error of the
    ``arrivals`` the rate was read from (module docstring)."""
    rel = band(arrivals)
    if rel is None or current <= 0 or need <= current:
        return False
    return need <= current * (1.0 + rel)


def held_why(need: float, current: int, arrivals: float) -> str:
    """The reason a need within the error does not scale up, in its numbers."""
    rel = band(arrivals) or 0.0
    return (
        f"a need of {need:.2f} replicas is within the arrival rate's sampling error of "
        f"{current} ({arrivals:.0f} requests in the window: ±{rel:.1%} at {1 - CHANCE:.0%})"
    )
