"""``tokenscale playground``: the whole autoscaling loop on this machine, on a live twin of a
vLLM fleet. Reads the inputs, draws the live view, the summary and the plot; the run itself is
``tokenscale.playground``.
"""

from __future__ import annotations

import enum
import json
import math
import shutil
import signal
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tokenscale.cli.inputs import bad_input, fail_invalid, read_input

if TYPE_CHECKING:
    from rich.panel import Panel
    from rich.table import Table

    from tokenscale.playground.drills import PlaygroundFaultReport
    from tokenscale.playground.session import Frame, PlaygroundResult
    from tokenscale.simulation import Trace
    from tokenscale.simulation.trace import TraceRequest


class LoadShape(enum.StrEnum):
    step = "step"
    ramp = "ramp"
    burst = "burst"
    idle_burst = "idle-burst"


def _fmt(value: float | None, unit: str = "", scale: float = 1.0, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value * scale:.{digits}f}{unit}"


def render_frame(frame: Frame, ttft_slo: float | None, tpot_slo: float | None) -> Panel:
    """The live view: replicas against the constraints, pressure, latency, events."""
    from rich.console import Group  # noqa: PLC0415
    from rich.panel import Panel  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415
    from rich.text import Text  # noqa: PLC0415

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    c = frame.constraints
    constraints = " · ".join(f"{k} {v:.2f}" for k, v in c.items()) or "–"
    grid.add_row(
        "replicas",
        f"desired {frame.desired if frame.desired is not None else '–'} · ready {frame.ready} · "
        f"starting {frame.starting}   (plan: {constraints})",
    )
    grid.add_row(
        "pressure",
        f"KV usage {_fmt(frame.kv_usage, ' %', 100, 0)} · queue {_fmt(frame.waiting, '', 1, 0)}",
    )
    grid.add_row(
        "latency P99",
        f"TTFT {_fmt(frame.ttft_p99_s, ' s')} (SLO {_fmt(ttft_slo, ' s')}) · "
        f"TPOT {_fmt(frame.tpot_p99_s, ' ms', 1000, 0)} (SLO {_fmt(tpot_slo, ' ms', 1000, 0)})",
    )
    grid.add_row(
        "requests",
        f"sent {frame.sent} · finished {frame.done} · "
        f"SLO attainment {_fmt(frame.attainment, ' %', 100, 1)}",
    )
    grid.add_row("decision", Text(frame.decision or "–", overflow="fold"))
    events = Text("\n".join(f"{e.t_s / 60:5.1f} min  {e.message}" for e in frame.events) or "–")
    grid.add_row("events", events)
    title = f"tokenscale playground · t = {frame.t_s / 60:.1f} min (modelled) · {frame.phase}"
    return Panel(Group(grid), title=title, title_align="left")


def summary_table(r: PlaygroundResult) -> Table:
    from rich.table import Table  # noqa: PLC0415

    table = Table(title=f"playground summary: {r.service} · ×{r.speed:g}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("load", r.trace),
        ("modelled duration", f"{r.duration_s / 60:.1f} min"),
        ("requests sent / completed", f"{r.sent} / {r.completed}"),
        ("SLO attainment", f"{r.slo_attainment * 100:.1f} %"),
        ("TTFT P50 / P99", f"{_fmt(r.ttft_p50_s, ' s')} / {_fmt(r.ttft_p99_s, ' s')}"),
        ("TPOT P99", _fmt(r.tpot_p99_s, " ms", 1000, 0)),
        ("GPU-hours", f"{r.gpu_hours:.2f}"),
        ("replicas max (ready)", str(r.replicas_max)),
        ("scale events", str(sum(1 for e in r.events if e.reason != "Fault"))),
    ]
    from tokenscale.playground.summary import wake_ttfts  # noqa: PLC0415

    for role in ("prefill", "decode"):  # a prefill/decode service: each role's most ready
        counts = [f[role].ready for _, f in r.role_timeline if role in f]
        if counts:
            rows.append((f"{role} replicas max (ready)", str(max(counts))))
    wakes = wake_ttfts(r)
    if wakes:  # the first request of each stretch at zero replicas waited for a woken one
        rows.append(("woken from zero: first TTFT", ", ".join(f"{w:.0f} s" for w in wakes)))
    for k, v in rows:
        table.add_row(k, v)
    return table


def fault_table(reports: list[PlaygroundFaultReport]) -> Table:
    """One row per fault: recovery, attainment, queue and KV during it (beside the run
    without it where there was one) and the operator's scale events meanwhile."""
    from rich.table import Table  # noqa: PLC0415

    table = Table(title="fault drills")
    for col in ("fault", "recovery", "attainment during", "max queue", "max KV", "operator"):
        table.add_column(col)

    def beside(value: str, other: str | None) -> str:
        return value if other is None else f"{value} ({other})"

    for r in reports:
        rec = "not recovered" if r.recovery_s is None else f"{r.recovery_s:.0f} s"
        without = r.slo_attainment_during_without
        table.add_row(
            f"{r.kind} @{r.at_s / 60:.1f} min",
            rec,
            beside(
                f"{r.slo_attainment_during * 100:.1f} %",
                None if without is None else f"{without * 100:.1f} %",
            ),
            beside(
                str(r.max_waiting_during),
                None if r.max_waiting_during_without is None else str(r.max_waiting_during_without),
            ),
            beside(
                f"{r.kv_usage_max_during * 100:.0f} %",
                None
                if r.kv_usage_max_during_without is None
                else f"{r.kv_usage_max_during_without * 100:.0f} %",
            ),
            "; ".join(d.split(":", 2)[0] + ":" + d.split(":", 2)[1] for d in r.decisions)
            if r.decisions
            else "none",
        )
    return table


def draw_playground(r: PlaygroundResult, path: Path) -> None:
    import matplotlib  # noqa: PLC0415 - only for --plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    tl = r.timeline
    t = [p.t_s / 60 for p in tl]
    fig, (ax_rps, ax_rep, ax_kv, ax_lat) = plt.subplots(4, 1, figsize=(11, 10), sharex=True)
    ax_rps.plot(t, [p.arrival_rps for p in tl], color="black", lw=1)
    ax_rps.set_ylabel("arrivals / s")
    ax_rps.set_title(f"{r.service} · {r.trace} · ×{r.speed:g} · {r.slo_attainment * 100:.1f} % SLO")
    ax_rep.step(t, [p.replicas_target for p in tl], where="post", ls=":", label="desired")
    ax_rep.step(t, [p.replicas_ready for p in tl], where="post", label="ready")
    for e in r.events:
        ax_rep.axvline(e.t_s / 60, color="grey", lw=0.5)
    ax_rep.set_ylabel("replicas")
    ax_rep.legend(loc="upper left", fontsize=8)
    ax_kv.plot(t, [p.kv_usage_max for p in tl], label="KV usage (max)")
    ax_kv.set_ylim(0, 1.05)
    ax_kv.set_ylabel("KV usage")
    ax_q = ax_kv.twinx()
    ax_q.plot(t, [p.waiting for p in tl], color="tab:orange", lw=1)
    ax_q.set_ylabel("waiting", color="tab:orange")
    nan = float("nan")
    ax_lat.plot(t, [p.ttft_p99_s if p.ttft_p99_s is not None else nan for p in tl], label="TTFT")
    ax_lat.plot(t, [p.tpot_p99_s if p.tpot_p99_s is not None else nan for p in tl], label="TPOT")
    for slo, color in ((r.ttft_slo_s, "tab:blue"), (r.tpot_slo_s, "tab:orange")):
        if slo is not None:
            ax_lat.axhline(slo, color=color, ls="--", lw=1)
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("P99 s (Prometheus; dashed: SLO)")
    ax_lat.legend(loc="upper left", fontsize=8)
    ax_lat.set_xlabel("minutes (modelled)")
    for ax in (ax_rps, ax_rep, ax_kv, ax_lat):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _cut(trace: Trace, duration_s: float | None) -> Trace:
    from tokenscale.simulation import Trace  # noqa: PLC0415 - the simulator loads when used

    if duration_s is None:
        return trace
    kept: tuple[TraceRequest, ...] = tuple(r for r in trace.requests if r.arrival_s <= duration_s)
    if not kept:
        raise bad_input(f"--duration {duration_s:g}: the trace has no request that early")
    return Trace(kept, trace.source, trace.block_tokens)


def playground_command(
    spec: Annotated[
        Path | None,
        typer.Option("--spec", help="InferenceService YAML (default: a small Llama-8B on L4)."),
    ] = None,
    pd: Annotated[
        bool,
        typer.Option(
            "--pd",
            help="The bundled prefill/decode service (Llama-3.1-8B on L4, long prompts, "
            "twins per role behind a P/D router) under a step load of its own lengths.",
        ),
    ] = False,
    trace: Annotated[
        Path | None,
        typer.Option("--trace", help="Azure CSV or Mooncake JSONL (default: the bundled one)."),
    ] = None,
    load: Annotated[
        LoadShape | None, typer.Option("--load", help="A synthetic load instead of a trace.")
    ] = None,
    speed: Annotated[float, typer.Option(help="Modelled seconds per real second.")] = 20.0,
    duration: Annotated[
        float | None, typer.Option(help="Modelled seconds of load (default: the whole trace).")
    ] = None,
    rate_scale: Annotated[
        float | None,
        typer.Option(
            help="Multiply the trace's arrival rate (default: 0.2 for the bundled trace, 1 for "
            "--trace).",
            show_default=False,
        ),
    ] = None,
    low_rps: Annotated[
        float | None, typer.Option(help="--load: the low rate (default: half the spec's mean).")
    ] = None,
    high_rps: Annotated[
        float | None, typer.Option(help="--load: the high rate (default: 3× the spec's peak).")
    ] = None,
    cold_start: Annotated[
        float, typer.Option(help="Modelled seconds from a pod's creation to Ready.")
    ] = 60.0,
    settle: Annotated[
        float | None,
        typer.Option(help="Modelled seconds to watch after the load (default: window + 60)."),
    ] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the timeline PNG.")] = None,
    keep: Annotated[
        bool, typer.Option("--keep", help="Leave the cluster, Prometheus and the operator up.")
    ] = False,
    headless: Annotated[
        bool, typer.Option("--headless", help="No live view: progress lines only.")
    ] = False,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json",
            help="Also write the summary as JSON here (attainment, GPU-hours, scale events, "
            "replicas max, desired and ready replicas per modelled minute).",
        ),
    ] = None,
    workdir: Annotated[
        Path | None, typer.Option(help="Logs, kubeconfig and data (default: a temp dir).")
    ] = None,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            "--fault",
            help="A fault drill, KIND@MM:SS of the load (repeatable): replica-loss, cache-flush, "
            "traffic-x2, retry-storm, long-burst. Clients retry broken streams 1 s later.",
        ),
    ] = None,
    fault_baseline: Annotated[
        bool,
        typer.Option(
            "--fault-baseline/--no-fault-baseline",
            help="With --fault: first run the same load without the faults, for the report's "
            "'without' columns (doubles the time).",
        ),
    ] = True,
) -> None:
    """Run the operator against a live twin of a vLLM fleet on this machine.

    A real control plane, Prometheus and `tokenscale run`; one twin per pod; a trace replayed
    through a least-loaded router."""
    # the playground (aiohttp, the Kubernetes client) loads only when it runs: `plan` stays fast
    from asyncio import run as asyncio_run  # noqa: PLC0415

    from rich.console import Console  # noqa: PLC0415
    from rich.live import Live  # noqa: PLC0415

    from tokenscale.api.errors import SpecError  # noqa: PLC0415
    from tokenscale.data import AZURE_CONVERSATION, bundled_trace  # noqa: PLC0415
    from tokenscale.playground.load import shaped_trace  # noqa: PLC0415
    from tokenscale.playground.service import (  # noqa: PLC0415
        PD_SPEC,
        InfeasiblePlanError,
        default_spec_path,
        load_service,
        scale_to_zero,
        spec_mix,
    )
    from tokenscale.playground.session import Playground, PlaygroundOptions  # noqa: PLC0415
    from tokenscale.playground.summary import summary_json  # noqa: PLC0415
    from tokenscale.simulation import TraceError, parse_trace, scale_trace  # noqa: PLC0415
    from tokenscale.simulation.faults import faulted_trace, parse_fault  # noqa: PLC0415

    console = Console()
    try:
        faults = tuple(parse_fault(f) for f in fault or [])
    except ValueError as err:
        raise bad_input(str(err)) from err
    if faults and keep:
        raise bad_input("--fault with --keep: a drill stops what it started; drop one of them")
    if speed <= 0:
        raise bad_input("--speed must be > 0")
    if trace is not None and load is not None:
        raise bad_input("--trace and --load are exclusive")
    if json_out is not None and not json_out.parent.is_dir():
        raise bad_input(
            f"--json {json_out}: the folder {json_out.parent} does not exist; create it"
        )
    if rate_scale is not None and not rate_scale > 0:
        raise bad_input(f"--rate-scale {rate_scale:g}: use a value > 0")
    if pd and spec is not None:
        raise bad_input("--pd and --spec are exclusive: --pd runs the bundled P/D spec")
    path = spec or (default_spec_path(PD_SPEC) if pd else default_spec_path())
    try:
        service = load_service(read_input(path), str(path))
    except InfeasiblePlanError as err:  # valid, but nothing can serve it: exit 1, as `plan`
        Console(stderr=True).print(f"error: {err}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from err
    except SpecError as err:
        fail_invalid(err, path)
        return
    if service.disaggregated and load is LoadShape.idle_burst:
        raise bad_input(
            f"--load idle-burst with {path}: a prefill/decode service cannot sleep at zero "
            "replicas (its wake-up source, an InferencePool, is not rendered for a P/D pair); "
            "use --load step, ramp or burst"
        )
    if service.disaggregated and trace is None and load is None:
        load = LoadShape.step  # a disaggregated service exists for its long prompts: its own
    zero_note = ""
    if load is LoadShape.idle_burst:
        service, zero_note = scale_to_zero(service, str(path))
    try:
        if load is not None:
            w = service.spec.workload
            peak = w.rps.peak or w.rps.mean * (w.rps.burst_factor or 1.0)
            run_trace = shaped_trace(
                load.value,
                duration or 900.0,
                low_rps if low_rps is not None else w.rps.mean / 2,
                high_rps if high_rps is not None else 3 * peak,
                # a P/D service's load has its own lengths (its reason to exist: long prompts)
                mix=spec_mix(service) if service.disaggregated else None,
            )
        else:
            source = trace or bundled_trace(AZURE_CONVERSATION)
            parsed = parse_trace(read_input(source), source=source.name)
            scale = rate_scale if rate_scale is not None else (0.2 if trace is None else 1.0)
            run_trace = _cut(scale_trace(parsed, rate_scale=scale), duration)
    except TraceError as err:
        raise bad_input(str(err)) from err
    own_dir = workdir is None
    work = workdir or Path(tempfile.mkdtemp(prefix="tokenscale-playground-"))
    replicas = service.plan.replicas.total if service.plan.replicas is not None else 1
    played = faulted_trace(run_trace, faults, service.identity.max_model_len, replicas)
    opts = PlaygroundOptions(
        service=service,
        trace=played,
        workdir=work / "faulted" if faults else work,
        speed=speed,
        cold_start_s=cold_start,
        settle_s=settle,
        keep=keep,
        faults=faults,
        client_retries=bool(faults),
    )

    def note(message: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        console.print(f"[dim]{stamp}[/] {message}", highlight=False)

    if zero_note:
        note(f"--load idle-burst: the service sleeps at zero replicas: {zero_note}")

    def stop_on_term(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM stops everything, as Ctrl-C does

    signal.signal(signal.SIGTERM, stop_on_term)
    slo = service.spec.slo
    baseline: PlaygroundResult | None = None
    if faults and fault_baseline:
        note("the drill's baseline: the same load without the faults")
        base_opts = replace(opts, trace=run_trace, workdir=work / "baseline", faults=())
        base_pg = Playground(base_opts, note)
        try:
            base_pg.start_infrastructure()
            baseline = asyncio_run(base_pg.run())
        except KeyboardInterrupt:
            console.print("interrupted: stopping everything the playground started")
            raise typer.Exit(130) from None
        finally:
            base_pg.stop()
        note("baseline done; now the load with the faults")
    pg = Playground(opts, note)
    ok = False
    try:
        pg.start_infrastructure()
        console.print(
            f"[bold]KUBECONFIG={pg.kubeconfig}[/]  (in another terminal: "
            "kubectl get infsvc -n playground -w)",
            highlight=False,
        )
        if headless:
            result = asyncio_run(pg.run())
        else:
            with Live(console=console, refresh_per_second=2, transient=False) as live:

                def show(frame: Frame) -> None:
                    live.update(render_frame(frame, slo.ttft_p99_seconds, slo.tpot_p99_seconds))

                result = asyncio_run(pg.run(show))
            console.print()
        ok = True
    except KeyboardInterrupt:
        console.print("interrupted: stopping everything the playground started")
        raise typer.Exit(130) from None
    finally:
        if keep:
            stop = pg.write_stop_script()
            console.print(f"left running; stop it with: sh {stop}", highlight=False)
        else:
            pg.stop()
            if own_dir and ok:
                shutil.rmtree(work, ignore_errors=True)
            elif not ok:
                console.print(f"logs kept in {work}", highlight=False)
    console.print(summary_table(result))
    for e in result.events:
        console.print(f"  {e.t_s / 60:5.1f} min  {e.message}", highlight=False)
    if plot is not None:
        draw_playground(result, plot)
        console.print(f"timeline written to {plot}", highlight=False)
    summary = summary_json(result)
    if faults:
        from tokenscale.playground.drills import fault_reports  # noqa: PLC0415

        reports = fault_reports(
            faults, result, played, service.identity.max_model_len, baseline, run_trace
        )
        console.print(fault_table(reports))
        summary["faults"] = [asdict(r) for r in reports]
        summary["without_faults"] = summary_json(baseline) if baseline is not None else None
    if json_out is not None:
        json_out.write_text(json.dumps(summary, indent=2) + "\n")
        console.print(f"summary written to {json_out}", highlight=False)
