"""``spec.workload.classes``: tenants and priorities sharing one model's fleet.

Each class is one tenant's (or one product's) traffic with its own rates, token lengths, SLOs,
priority and optional quota. The top-level ``spec.workload`` becomes their sum
(:func:`sum_of`): rates add, token means are the request-weighted means, and the P95/P99 of the
sum are the quantiles of the mixture (each class's lengths taken as log-normal through its mean
and tail, weighted by its mean rate; :func:`mixture_quantile`).

Priority is ``critical``, ``standard`` or ``sheddable``, or an integer as the
``InferenceObjective`` of llm-d's router uses it (higher is served first; negative allowed).
The names map to integers 10, 0 and -10 (:data:`TIER_PRIORITY`); an integer maps back to a
tier by sign (> 0 critical, 0 standard, < 0 sheddable). vLLM's request ``priority`` runs the
other way (lower is handled first), so a client sends vLLM the negated objective priority.
"""

import math
from collections.abc import Sequence
from typing import Literal, Self

from pydantic import Field, model_validator

from tokenscale.api.base import MAX_RPS, ApiModel
from tokenscale.api.slo import Slo
from tokenscale.api.workload_stats import Rps, TokenDistribution

Tier = Literal["critical", "standard", "sheddable"]

#: The InferenceObjective priority each tier name stands for (higher: served first).
TIER_PRIORITY: dict[Tier, int] = {"critical": 10, "standard": 0, "sheddable": -10}


def tier_of(priority: Tier | int) -> Tier:
    """The tier of a name or an integer priority: > 0 critical, 0 standard, < 0 sheddable."""
    if isinstance(priority, str):
        return priority
    if priority > 0:
        return "critical"
    return "standard" if priority == 0 else "sheddable"


class Quota(ApiModel):
    """A class's ceiling. tokenscale does not enforce it (it sees no per-request identity): the
    gateway's rate limits must; the planner sizes the class for at most this much."""

    max_rps: float | None = Field(
        default=None, gt=0, le=MAX_RPS, description="Most requests per second the class may send."
    )
    max_tokens_per_second: float | None = Field(
        default=None,
        gt=0,
        le=MAX_RPS * 1e4,
        description="Most prompt + output tokens per second the class may send.",
    )


class WorkloadClass(ApiModel):
    """One tenant's or product's traffic on the shared fleet."""

    name: str = Field(
        min_length=1,
        max_length=40,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="The class's name (a DNS label: its InferenceObjective's name suffix).",
    )
    rps: Rps = Field(description="The class's request rate.")
    input_tokens: TokenDistribution = Field(description="Prompt tokens per request.")
    output_tokens: TokenDistribution = Field(description="Generated tokens per request.")
    slo: Slo | None = Field(
        default=None,
        description="The class's own objectives (absent: spec.slo); a sheddable class has none.",
    )
    priority: Tier | int = Field(
        default="standard",
        description="critical | standard | sheddable, or an InferenceObjective integer "
        "(critical=10, standard=0, sheddable=-10; higher is served first; < 0 is sheddable).",
    )
    quota: Quota | None = Field(
        default=None,
        description="maxRps / maxTokensPerSecond: enforced by the gateway's rate limits, not "
        "by tokenscale.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.tier == "sheddable" and self.slo is not None and self.slo.any_set:
            raise ValueError(
                "a sheddable class is served from the slack the guaranteed classes leave and "
                "cannot be promised an SLO: remove its slo, or make its priority standard"
            )
        q = self.quota
        if q is not None and q.max_rps is not None and q.max_rps < self.rps.mean:
            raise ValueError(
                f"quota.maxRps={q.max_rps:g} is below the class's own rps.mean="
                f"{self.rps.mean:g}: raise the quota or lower the forecast"
            )
        tokens = self.rps.mean * (self.input_tokens.mean + self.output_tokens.mean)
        cap = q.max_tokens_per_second if q is not None else None
        if cap is not None and cap < tokens:
            raise ValueError(
                f"quota.maxTokensPerSecond={cap:g} is below the class's own mean {tokens:g} "
                "tokens/s (rps.mean × (input + output mean)): raise the quota or lower the "
                "forecast"
            )
        return self

    @property
    def tier(self) -> Tier:
        return tier_of(self.priority)

    @property
    def objective_priority(self) -> int:
        """The InferenceObjective's integer priority."""
        p = self.priority
        return p if isinstance(p, int) else TIER_PRIORITY[p]

    @property
    def guaranteed(self) -> bool:
        """Critical and standard classes are sized for; sheddable ones fill the slack."""
        return self.tier != "sheddable"

    @property
    def design_rps(self) -> float:
        """The class's peak, capped by its quota's maxRps (it cannot send more)."""
        peak = self.rps.design_rps
        if self.quota is not None and self.quota.max_rps is not None:
            return min(peak, self.quota.max_rps)
        return peak


#: z-scores of the standard normal at 0.95 and 0.99.
_Z = {0.95: 1.6448536269514722, 0.99: 2.3263478740408408}


def _lognormal(mean: float, q: float | None, z: float) -> tuple[float, float]:
    """(mu, sigma) of the log-normal with ``mean`` and quantile ``q`` at ``z``; sigma is the
    smaller root. A tail too far for a log-normal with that mean (no root) keeps the quantile,
    not the mean: sigma ``z`` through ``q`` (the fitted mean then exceeds the stated one). No
    tail: a point mass."""
    if q is None or q <= mean:
        return math.log(mean), 0.0
    disc = z * z - 2.0 * math.log(q / mean)
    if disc <= 0:
        return math.log(q) - z * z, z
    sigma = z - math.sqrt(disc)
    return math.log(mean) - sigma * sigma / 2.0, sigma


def _cdf(x: float, mu: float, sigma: float) -> float:
    if sigma == 0.0:
        return 1.0 if math.log(x) >= mu else 0.0
    return 0.5 * (1.0 + math.erf((math.log(x) - mu) / (sigma * math.sqrt(2.0))))


def mixture_quantile(parts: Sequence[tuple[float, TokenDistribution]], p: float) -> float:
    """The ``p`` quantile of the mixture of ``parts`` (weight, distribution): each part a
    log-normal through its mean and its own ``p`` quantile (P95 absent: fitted through P99),
    found by bisection on the weighted CDF (``p`` is 0.95 or 0.99). Always between the parts'
    smallest and largest ``p`` quantile."""
    total = sum(w for w, _ in parts)
    fits = []
    for w, d in parts:
        q, z = (d.p95, _Z[0.95]) if p == 0.95 and d.p95 is not None else (d.p99, _Z[0.99])
        fits.append((w / total if total > 0 else 1.0 / len(parts), *_lognormal(d.mean, q, z)))
    z_p = _Z[p]
    own = [math.exp(mu + z_p * s) for _, mu, s in fits]
    lo, hi = min(own), max(own)
    if hi - lo <= 1e-9 * hi:
        return hi
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if sum(w * _cdf(mid, mu, s) for w, mu, s in fits) >= p:
            hi = mid
        else:
            lo = mid
    return hi


def sum_tokens(parts: Sequence[tuple[float, TokenDistribution]]) -> TokenDistribution:
    """The token distribution of the mixture: the weighted mean, the mixture's P95 and P99."""
    total = sum(w for w, _ in parts)
    weights = [w / total if total > 0 else 1.0 / len(parts) for w, _ in parts]
    mean = sum(w * d.mean for w, (_, d) in zip(weights, parts, strict=True))
    p99 = max(mean, mixture_quantile(parts, 0.99))
    p95 = min(p99, mixture_quantile(parts, 0.95))
    return TokenDistribution(mean=mean, p95=p95, p99=p99)


def sum_rps(classes: Sequence[WorkloadClass]) -> Rps:
    """Rates add. The peak of the sum is taken as the sum of the peaks (the classes' peaks are
    assumed to coincide: the safe side, since nothing says when each peaks)."""
    mean = sum(c.rps.mean for c in classes)
    peak = max(mean, sum(c.design_rps for c in classes))
    return Rps(mean=mean, peak=peak)


def tokens_of(
    classes: Sequence[WorkloadClass],
) -> tuple[TokenDistribution, TokenDistribution]:
    """Input and output token distributions of the classes' mixture (weights: mean rates; all
    classes equal when every mean is 0)."""
    ins = [(c.rps.mean, c.input_tokens) for c in classes]
    outs = [(c.rps.mean, c.output_tokens) for c in classes]
    return sum_tokens(ins), sum_tokens(outs)


def duplicate_names(classes: Sequence[WorkloadClass]) -> list[str]:
    seen: set[str] = set()
    dups = []
    for c in classes:
        if c.name in seen:
            dups.append(c.name)
        seen.add(c.name)
    return dups
