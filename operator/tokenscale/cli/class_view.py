"""The classes of ``spec.workload.classes`` as every view shows them: one sentence per class
(the compact view, the CSV cell, the Markdown list), and a table with one row per class
(``-o wide``). The figures are :class:`~tokenscale.planning.result.ClassShare` fields
(planning/classes.py computes them)."""

from tokenscale.cli.fit import Column, FittedTable
from tokenscale.cli.plan_figures import duration_text
from tokenscale.planning.result import ClassShare, Plan, SloCheck


def _check_text(c: SloCheck) -> str:
    name = c.name.replace("_", " ").upper()
    mark = "≤" if c.met else ">"
    return (
        f"{name} {duration_text(c.estimate_s)} {mark} {duration_text(c.target_s)} "
        f"{'✓' if c.met else '✗'}"
    )


def _money(value: float | None, currency: str, fmt: str = ",.2f") -> str:
    return "no price" if value is None else f"{value:{fmt}} {currency}"


def served_text(c: ClassShare) -> str:
    """``guaranteed`` or ``12% at the guaranteed peak, 49% at their mean``."""
    if c.guaranteed:
        return "guaranteed"
    return (
        f"{c.served_fraction_at_peak:.0%} at the guaranteed peak, "
        f"{c.served_fraction_at_mean:.0%} at their mean"
    )


def class_line(c: ClassShare, currency: str) -> str:
    """One class in a sentence."""
    parts = [
        f"{c.name} ({c.tier}, priority {c.priority}): {c.rps_mean:,.2f} mean / "
        f"{c.rps_design:,.2f} peak req/s",
    ]
    parts += [_check_text(x) for x in c.slo_checks]
    if c.replicas_for_slo is not None:
        parts.append(
            f"its SLO needs {c.replicas_for_slo} replicas" + (" (binds)" if c.binding else "")
        )
    parts.append(f"served: {served_text(c)}")
    parts.append(
        f"showback {c.gpus:,.2f} GPU · {_money(c.cost_per_hour, currency)}/h · "
        f"{_money(c.cost_per_million_tokens, currency, ',.3f')} per 1M tokens"
    )
    return " · ".join(parts)


def classes_lines(p: Plan) -> list[str]:
    """The summary's sentence, then one per class (empty without classes)."""
    s = p.classes_summary
    if s is None:
        return []
    head = s.reason
    if s.guarantee_all_gpus is not None and s.sheddable_rps_design > 0:
        extra = s.extra_gpus_to_guarantee_all or 0
        head += (
            f"; guaranteeing every class too: {s.guarantee_all_gpus} GPUs (+{extra}), "
            f"{_money(s.guarantee_all_cost_per_hour, p.currency)}/h"
        )
    return [head, *[class_line(c, p.currency) for c in p.classes]]


def _slo_cell(c: ClassShare, name: str) -> str:
    x = next((k for k in c.slo_checks if k.name == name), None)
    if x is None:
        return "—"
    return f"{duration_text(x.estimate_s)}/{duration_text(x.target_s)} {'✓' if x.met else '✗'}"


def classes_table(p: Plan) -> FittedTable:
    """One row per class, fitted to the terminal (the least needed columns go first)."""
    money = f"{p.currency}/h"
    per_m = f"{p.currency}/1M tok"
    rows = [
        [
            c.name,
            c.tier,
            str(c.priority),
            f"{c.rps_mean:,.2f}",
            f"{c.rps_design:,.2f}",
            _slo_cell(c, "ttft_p99"),
            _slo_cell(c, "tpot_p99"),
            "—"
            if c.replicas_for_slo is None
            else f"{c.replicas_for_slo}{' *' if c.binding else ''}",
            served_text(c) if not c.guaranteed else "100%",
            f"{c.gpus:,.2f}",
            f"{c.gpu_hours_per_day:,.1f}",
            "—" if c.cost_per_hour is None else f"{c.cost_per_hour:,.2f}",
            "—" if c.cost_per_million_tokens is None else f"{c.cost_per_million_tokens:,.3f}",
        ]
        for c in p.classes
    ]
    headers = (
        "class",
        "tier",
        "priority",
        "mean RPS",
        "peak RPS",
        "TTFT P99",
        "TPOT P99",
        "replicas for SLO",
        "served",
        "GPUs",
        "GPU-h/day",
        money,
        per_m,
    )
    drop = {"priority": 6, "mean RPS": 5, "GPU-h/day": 4, "tier": 3, "peak RPS": 2, money: 1}
    left = ("class", "tier", "served")
    columns = [
        Column(h, justify="left" if h in left else "right", drop=drop.get(h, 0)) for h in headers
    ]
    s = p.classes_summary
    title = f"Classes: {s.reason}" if s is not None else "Classes"
    return FittedTable(columns, rows, title=title)


def classes_markdown(p: Plan) -> list[str]:
    """The classes as a Markdown table, with the summary above it (empty without classes)."""
    s = p.classes_summary
    if s is None:
        return []
    lines = ["", f"Classes: {classes_lines(p)[0]}.", ""]
    lines += [
        f"| class | tier | priority | mean/peak RPS | SLO checks | replicas for SLO | served "
        f"| GPUs | {p.currency}/h | {p.currency}/1M tokens |",
        "|" + "---|" * 10,
    ]
    for c in p.classes:
        checks = ", ".join(_check_text(x) for x in c.slo_checks) or "—"
        lines.append(
            "| "
            + " | ".join(
                x.replace("|", "\\|")
                for x in (
                    c.name,
                    c.tier,
                    str(c.priority),
                    f"{c.rps_mean:,.2f} / {c.rps_design:,.2f}",
                    checks,
                    "—"
                    if c.replicas_for_slo is None
                    else f"{c.replicas_for_slo}{' (binds)' if c.binding else ''}",
                    served_text(c),
                    f"{c.gpus:,.2f}",
                    "—" if c.cost_per_hour is None else f"{c.cost_per_hour:,.2f}",
                    "—"
                    if c.cost_per_million_tokens is None
                    else f"{c.cost_per_million_tokens:,.3f}",
                )
            )
            + " |"
        )
    return lines


def short_text(p: Plan) -> str | None:
    """``classes: chat binds; batch 12%/49% served`` (None without classes)."""
    s = p.classes_summary
    if s is None:
        return None
    shed = [c for c in p.classes if not c.guaranteed]
    text = f"classes: {s.binding_class} binds"
    if shed:
        text += "; " + ", ".join(
            f"{c.name} {c.served_fraction_at_peak:.0%}/{c.served_fraction_at_mean:.0%} served"
            for c in shed
        )
    return text
