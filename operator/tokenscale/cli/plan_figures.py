"""The figures every plan view shows the same way: each latency once, with its SLO, and
durations rounded for people."""

from dataclasses import dataclass

from tokenscale.planning.result import Plan, SloCheck


@dataclass(frozen=True)
class Latency:
    """One SLO'd latency: the estimate at the load each replica carries, and its target."""

    name: str
    estimate_s: float
    target_s: float | None
    met: bool | None


def latencies(p: Plan) -> list[Latency]:
    """TTFT P99, TPOT P99 and E2E P99 (P95 rows too where an SLO is set on them): each once."""
    checks: dict[str, SloCheck] = {c.name: c for c in p.slo_checks}
    tpot_p99 = p.at_load.tpot_p99_s if p.at_load is not None else p.tpot_p99_estimate_s
    rows = [
        ("TTFT P99", "ttft_p99", p.ttft_p99_estimate_s),
        ("TPOT P99", "tpot_p99", tpot_p99),
        ("E2E P99", "e2e_p99", p.e2e_p99_estimate_s),
    ]
    out = []
    for label, key, estimate in rows:
        c = checks.pop(key, None)
        out.append(
            Latency(
                label,
                c.estimate_s if c else estimate,
                c.target_s if c else None,
                c.met if c else None,
            )
        )
    for c in checks.values():  # the P95 SLOs, when set
        out.append(Latency(c.name.replace("_", " ").upper(), c.estimate_s, c.target_s, c.met))
    return out


def duration_text(seconds: float) -> str:
    """``634 ms``, ``76.6 ms``, ``1.25 s``, ``63.8 s``, ``649 s``: three significant figures at
    most."""
    if seconds < 1:
        ms = seconds * 1e3
        return f"{ms:,.1f} ms" if ms < 100 else f"{ms:,.0f} ms"
    if seconds >= 100:
        return f"{seconds:,.0f} s"
    return f"{seconds:,.2f} s" if seconds < 10 else f"{seconds:,.1f} s"


def cannot_serve(p: Plan) -> bool:
    """True when no replica count serves this configuration (it does not fit, a request does
    not fit, the SLOs are missed at batch 1): its latency, throughput and cost would be figures
    of a replica that cannot run, so the views show why instead. A plan that only falls short
    of ``maxReplicas`` still serves and keeps its figures."""
    return p.replicas is None


def why_not(p: Plan) -> str:
    """The first reason a plan is infeasible (the views that have one line for it)."""
    return p.infeasible_reasons[0] if p.infeasible_reasons else "infeasible"
