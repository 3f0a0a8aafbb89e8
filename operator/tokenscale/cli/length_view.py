"""Length classes (``spec.serving.lengthClasses``) as every view shows them: the verdict
against one shared pool and one sentence per class (the compact view, the CSV cell, the
Markdown list), a table with one row per class (``-o wide``), and a few words for ``-o short``.
The figures are :class:`~tokenscale.planning.result.LengthClassesSummary` fields
(planning/length_classes.py computes them)."""

from tokenscale.cli.fit import Column, FittedTable
from tokenscale.cli.plan_figures import duration_text
from tokenscale.planning.formulas import counted
from tokenscale.planning.result import LengthClassesSummary, LengthClassRow, Plan


def _range(c: LengthClassRow) -> str:
    if c.max_input_tokens is None:
        return f"> {c.above_tokens:,} tokens"
    return f"≤ {c.max_input_tokens:,} tokens"


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else duration_text(seconds)


def _p99(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def class_line(c: LengthClassRow) -> str:
    """One class in a sentence."""
    parts = [
        f"{c.name} (prompts {_range(c)}): {c.share:.1%} of requests, {c.rps_design:,.2f} peak "
        f"req/s, prompts mean {c.input_tokens_mean:,.0f} / P99 {_p99(c.input_tokens_p99)}",
        f"{counted(c.replicas, 'replica')} ({counted(c.gpus, 'GPU')})",
        f"TTFT P99 {_ms(c.ttft_p99_s)} in its pool, {_ms(c.ttft_p99_shared_s)} on one shared pool",
        f"chunk budget {c.max_num_batched_tokens:,}",
    ]
    if not c.feasible:
        parts.append("its pool misses the SLOs")
    return " · ".join(parts)


def shared_line(s: LengthClassesSummary) -> str:
    """The alternative in a sentence."""
    if s.shared_replicas is None:
        return "one shared pool instead: cannot serve"
    return (
        f"one shared pool instead: {counted(s.shared_replicas, 'replica')} "
        f"({counted(s.shared_gpus or 0, 'GPU')}), TTFT P99 {_ms(s.shared_ttft_p99_s)}"
        + ("" if s.shared_feasible else ", misses the SLOs")
    )


def length_lines(p: Plan) -> list[str]:
    """The verdict, one sentence per class, then the shared pool (empty without classes)."""
    s = p.length_split
    if s is None:
        return []
    return [s.verdict, *[class_line(c) for c in s.classes], shared_line(s)]


def length_table(p: Plan) -> FittedTable:
    """One row per class, fitted to the terminal (the least needed columns go first)."""
    s = p.length_split
    rows = [
        [
            c.name,
            _range(c),
            f"{c.share:.1%}",
            f"{c.rps_design:,.2f}",
            f"{c.input_tokens_mean:,.0f}",
            _p99(c.input_tokens_p99),
            f"{c.replicas:,}",
            f"{c.gpus:,}",
            _ms(c.ttft_p99_s),
            _ms(c.ttft_p99_shared_s),
            f"{c.max_num_batched_tokens:,}",
        ]
        for c in (s.classes if s is not None else [])
    ]
    headers = (
        "class",
        "prompts",
        "share",
        "peak RPS",
        "prompt mean",
        "prompt P99",
        "replicas",
        "GPUs",
        "TTFT P99",
        "TTFT P99 shared",
        "chunk budget",
    )
    drop = {"chunk budget": 5, "prompt mean": 4, "peak RPS": 3, "GPUs": 2, "share": 1}
    left = ("class", "prompts")
    columns = [
        Column(h, justify="left" if h in left else "right", drop=drop.get(h, 0)) for h in headers
    ]
    title = "Length classes"
    if s is not None:
        title += f": {s.verdict}; {shared_line(s)}"
    return FittedTable(columns, rows, title=title)


def length_markdown(p: Plan) -> list[str]:
    """The classes as a Markdown table, the verdict above it (empty without classes)."""
    s = p.length_split
    if s is None:
        return []
    lines = ["", f"Length classes: {s.verdict}; {shared_line(s)}.", ""]
    lines += [
        "| class | prompts | share | peak RPS | prompt mean / P99 | replicas | TTFT P99 "
        "| TTFT P99 on one shared pool | chunk budget |",
        "|" + "---|" * 9,
    ]
    for c in s.classes:
        cells = (
            c.name,
            _range(c),
            f"{c.share:.1%}",
            f"{c.rps_design:,.2f}",
            f"{c.input_tokens_mean:,.0f} / {_p99(c.input_tokens_p99)}",
            f"{c.replicas:,}",
            _ms(c.ttft_p99_s),
            _ms(c.ttft_p99_shared_s),
            f"{c.max_num_batched_tokens:,}",
        )
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return lines


def short_text(p: Plan) -> str | None:
    """``length: isolation pays, 6 vs 9 GPUs shared`` (None without classes)."""
    s = p.length_split
    if s is None:
        return None
    head = "isolation pays" if s.pays else "shared is cheaper"
    shared = "—" if s.shared_gpus is None else str(s.shared_gpus)
    return f"length: {head}, {s.isolated_gpus} vs {shared} GPUs shared"
