"""The workload of each length class (``spec.serving.lengthClasses``), estimated from the whole.

``spec.workload``'s P95/P99 describe the whole mix, so a class's share and token statistics are
estimated from it unless the class states its own:

- **Prompt lengths** are taken as the log-normal through ``inputTokens.mean`` and ``.p99`` (the
  one the simulator draws and the timing model integrates, :mod:`tokenscale.planning.queueing`).
  A class with bounds ``(a, b]`` gets the truncated log-normal's mass as its **share**, its mean
  ``e^{μ+σ²/2}·[Φ((ln b−μ−σ²)/σ) − Φ((ln a−μ−σ²)/σ)] / share``, and its P95/P99 as the quantiles
  of the mass between the bounds. With no P99 (or P99 = mean) every prompt is the mean: the
  class that holds it takes all the requests. Prompts longer than ``maxContextTokens`` less
  the P99 answer are left out of a class's statistics (vLLM refuses a request that cannot fit;
  the share still counts them).
- **Answer lengths** are taken as independent of the prompt's: each class keeps the workload's
  ``outputTokens``.
- **Rates**: each class gets its share of the mean and of the peak (the mix is assumed to hold
  at the peak).

A class that states ``share``, ``inputTokens`` or ``outputTokens`` keeps what it states; each
figure says where it came from (:attr:`ClassWorkload.sources`).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from tokenscale.api.errors import SpecError
from tokenscale.api.length_classes import LengthClass
from tokenscale.api.workload import Rps, TokenDistribution, Workload
from tokenscale.planning.queueing import lognormal_mu_sigma

_UNIT = NormalDist()
#: Below this share a class gets no request worth a pool (one in 100,000).
MIN_SHARE = 1e-5


@dataclass(frozen=True)
class LogNormal:
    """Prompt lengths: ``ln X ~ N(mu, sigma²)`` (``sigma`` 0: every prompt is ``e^mu``)."""

    mu: float
    sigma: float

    @classmethod
    def through(cls, tokens: TokenDistribution) -> "LogNormal":
        """The log-normal with ``tokens``' mean and P99 (the timing model's,
        :func:`~tokenscale.planning.queueing.lognormal_mu_sigma`)."""
        return cls(*lognormal_mu_sigma(tokens.mean, tokens.p99_or_mean))

    def cdf(self, x: float) -> float:
        if x <= 0:
            return 0.0
        if math.isinf(x):
            return 1.0
        if self.sigma == 0.0:
            return 1.0 if math.log(x) >= self.mu else 0.0
        return _UNIT.cdf((math.log(x) - self.mu) / self.sigma)

    def partial_mean(self, lo: float, hi: float) -> float:
        """``E[X; lo < X ≤ hi]`` (not divided by the mass)."""
        if self.sigma == 0.0:
            x = math.exp(self.mu)
            return x if lo < x <= hi else 0.0
        s2 = self.sigma * self.sigma

        def upper(x: float) -> float:
            if x <= 0:
                return 0.0
            if math.isinf(x):
                return 1.0
            return _UNIT.cdf((math.log(x) - self.mu - s2) / self.sigma)

        return math.exp(self.mu + s2 / 2.0) * (upper(hi) - upper(lo))

    def quantile_between(self, lo: float, hi: float, q: float) -> float:
        """The ``q`` quantile of the prompts between ``lo`` and ``hi``."""
        if self.sigma == 0.0:
            return math.exp(self.mu)
        f_lo, f_hi = self.cdf(lo), self.cdf(hi)
        p = min(max(f_lo + q * (f_hi - f_lo), 1e-12), 1.0 - 1e-12)
        return min(math.exp(self.mu + self.sigma * _UNIT.inv_cdf(p)), hi)


@dataclass(frozen=True)
class ClassWorkload:
    """One length class's traffic: prompts above ``above_tokens`` and up to ``max_tokens``
    (None: no bound), its share of the requests, its workload, and where each figure came
    from (``sources``: share, inputTokens, outputTokens → "stated" or how it was estimated)."""

    name: str
    above_tokens: int
    max_tokens: int | None
    share: float
    workload: Workload
    sources: dict[str, str]


def split(workload: Workload, classes: Sequence[LengthClass]) -> list[ClassWorkload]:
    """Each class's traffic (module docstring). Raises :class:`SpecError` naming the class
    when none of the workload's prompts falls in it and it states no share of its own."""
    fit = LogNormal.through(workload.input_tokens)
    fitted = (
        f"estimated: a log-normal through inputTokens mean {workload.input_tokens.mean:g} and "
        f"P99 {workload.input_tokens.p99_or_mean:g}, cut at the class's bounds"
    )
    ceiling = math.inf
    if workload.max_context_tokens is not None:
        ceiling = max(1.0, workload.max_context_tokens - workload.output_tokens.p99_or_mean)
    out = []
    above = 0
    for i, c in enumerate(classes):
        hi = float(c.max_input_tokens) if c.max_input_tokens is not None else math.inf
        mass = fit.cdf(hi) - fit.cdf(float(above))
        share = c.share if c.share is not None else mass
        if share < MIN_SHARE:
            raise SpecError.single(
                f"spec.serving.lengthClasses[{i}]",
                f"({c.name}) no prompt of spec.workload.inputTokens (mean "
                f"{workload.input_tokens.mean:g}, P99 {workload.input_tokens.p99_or_mean:g}) "
                "falls in ({above:,}, "
                f"{'∞' if math.isinf(hi) else f'{hi:,.0f}'}] tokens (estimated share "
                f"{mass:.2g}): move its maxInputTokens, or state its share and inputTokens",
            )
        top = min(hi, ceiling) if ceiling > above else hi
        inputs = c.input_tokens or _cut(fit, float(above), top, fit.cdf(top) - fit.cdf(above))
        outputs = c.output_tokens or workload.output_tokens
        rps = Rps(mean=workload.rps.mean * share, peak=workload.rps.design_rps * share)
        out.append(
            ClassWorkload(
                name=c.name,
                above_tokens=above,
                max_tokens=c.max_input_tokens,
                share=share,
                workload=workload.model_copy(
                    update={"rps": rps, "input_tokens": inputs, "output_tokens": outputs}
                ),
                sources={
                    "share": "stated" if c.share is not None else fitted,
                    "inputTokens": "stated" if c.input_tokens is not None else fitted,
                    "outputTokens": "stated"
                    if c.output_tokens is not None
                    else "the workload's (answer length taken as independent of the prompt's)",
                },
            )
        )
        above = c.max_input_tokens or above
    return out


def _cut(fit: LogNormal, lo: float, hi: float, mass: float) -> TokenDistribution:
    """The prompts between ``lo`` and ``hi``: their mean, P95 and P99 (at least one token)."""
    if mass <= 0:  # a stated share where the fit has no prompt: the bound itself
        at = max(1.0, hi if math.isfinite(hi) else lo)
        return TokenDistribution(mean=at, p95=at, p99=at)
    mean = max(1.0, fit.partial_mean(lo, hi) / mass)
    p99 = max(mean, fit.quantile_between(lo, hi, 0.99))
    p95 = min(p99, max(1.0, fit.quantile_between(lo, hi, 0.95)))
    return TokenDistribution(mean=mean, p95=p95, p99=p99)
