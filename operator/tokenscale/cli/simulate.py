"""``tokenscale simulate FILE --trace TRACE``: replay a trace against a simulated fleet.

Reads the files, draws progress and tables; the simulation itself is the pure
``tokenscale.simulation`` package.
"""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import typer

from tokenscale.cli.inputs import (
    TableOrJson,
    bad_input,
    check_number,
    fail_invalid,
    read_input,
    warn,
)

if TYPE_CHECKING:
    from tokenscale.api.inference_service import InferenceService
    from tokenscale.cli.fit import FittedTable
    from tokenscale.planning.result import Plan
    from tokenscale.simulation import PolicyName, Setup, SimResult
    from tokenscale.simulation.faults import Fault
    from tokenscale.simulation.result import Explanation, Frontier
    from tokenscale.simulation.trace import Trace, TraceFormat


class PolicyChoice(enum.StrEnum):
    tokenscale = "tokenscale"
    oracle = "oracle"
    oracle_lead_time = "oracle-lead-time"
    best_static = "best-static"
    static = "static"
    queue_threshold = "queue-threshold"
    kv_threshold = "kv-threshold"
    all = "all"


class FormatChoice(enum.StrEnum):
    auto = "auto"
    azure = "azure"
    mooncake = "mooncake"
    csv = "csv"


#: The threshold policies' defaults (a value other than these was given on the command line).
QUEUE_TARGET = 2.0
KV_TARGET = 0.7


def _columns(text: str | None) -> dict[str, str] | None:
    if not text:
        return None
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in ("arrival", "input", "output"):
            raise bad_input(
                f"--columns {text!r}: expected arrival=COL,input=COL,output=COL (got {part!r})"
            )
        out[key.strip()] = value.strip()
    return out


def _label(r: SimResult) -> str:
    """The policy as the table names it (the JSON keeps ``policy`` as it is)."""
    if r.policy == "static":
        return f"static-at-peak ({r.replicas_max})"
    if r.policy == "best-static":
        return f"best-static ({r.static_replicas})"
    if r.policy == "oracle":
        return "oracle (replayed)"
    if r.policy == "oracle-lead-time":
        return "oracle, one cold start ahead"
    return r.policy


def _row(r: SimResult) -> list[str]:
    cost = "–" if r.cost is None else f"{r.cost:,.2f} {r.currency}"
    return [
        _label(r),
        f"{r.slo_attainment * 100:.2f} %",
        f"{r.ttft_p50_s:.2f} / {r.ttft_p99_s:.2f}",
        f"{r.tpot_p50_s * 1000:.0f} / {r.tpot_p99_s * 1000:.0f}",
        f"{r.e2e_p99_s:.1f}",
        f"{r.gpu_hours:.2f}",
        f"{r.gpu_hours_vs_oracle:.2f}×",
        cost,
        f"{r.scale_ups}↑ {r.scale_downs}↓",
        f"{r.replicas_mean:.1f} / {r.replicas_max}",
        f"{r.preemptions:,}",
    ]


def policy_table(results: list[SimResult], title: str) -> FittedTable:
    """One row per policy; narrow, the least needed columns are left out, no figure is cut."""
    from tokenscale.cli.fit import Column, FittedTable  # noqa: PLC0415

    drop = {
        "preemptions": 9,
        "scale events": 8,
        "E2E P99 s": 7,
        "replicas mean / max": 6,
        "TPOT P50 / P99 ms": 5,
        "÷ oracle": 4,
        "cost": 3,
    }
    columns = [
        Column(h, "left" if h == "policy" else "right", drop=drop.get(h, 0))
        for h in (
            "policy",
            "SLO attainment",
            "TTFT P50 / P99 s",
            "TPOT P50 / P99 ms",
            "E2E P99 s",
            "GPU-hours",
            "÷ oracle",
            "cost",
            "scale events",
            "replicas mean / max",
            "preemptions",
        )
    ]
    return FittedTable(columns, [_row(r) for r in results], title)


def simulate_command(
    file: Annotated[Path, typer.Argument(help="InferenceService YAML (or - for stdin).")],
    trace: Annotated[Path, typer.Option("--trace", help="Azure CSV, Mooncake JSONL or CSV.")],
    policy: Annotated[
        PolicyChoice,
        typer.Option(
            "--policy",
            metavar="POLICY",
            help="Scaling policy: tokenscale, oracle, best-static, static, queue-threshold, "
            "kv-threshold, or all to compare.",
        ),
    ] = PolicyChoice.tokenscale,
    output: Annotated[TableOrJson, typer.Option("-o", "--output")] = TableOrJson.table,
    trace_format: Annotated[FormatChoice, typer.Option("--format")] = FormatChoice.auto,
    columns: Annotated[
        str | None,
        typer.Option(help="Generic CSV columns: arrival=COL,input=COL,output=COL."),
    ] = None,
    arrival_unit: Annotated[str, typer.Option(help="Generic CSV arrival unit: s or ms.")] = "s",
    time_scale: Annotated[float, typer.Option(help="Stretch the trace's time by this.")] = 1.0,
    rate_scale: Annotated[float, typer.Option(help="Multiply the arrival rate by this.")] = 1.0,
    mismatch: Annotated[
        float, typer.Option(help="Real engine speed ÷ what the planner assumes (truth).")
    ] = 1.0,
    cold_start: Annotated[float, typer.Option(help="Seconds until a new replica serves.")] = 180.0,
    scrape_interval: Annotated[
        float, typer.Option(help="Prometheus scrape, seconds (1–3600).")
    ] = 15.0,
    interval: Annotated[float, typer.Option(help="Decision interval, seconds (1–3600).")] = 15.0,
    queue_target: Annotated[float, typer.Option(help="queue-threshold target.")] = QUEUE_TARGET,
    kv_target: Annotated[float, typer.Option(help="kv-threshold target.")] = KV_TARGET,
    seed: Annotated[int, typer.Option(help="Seed for rate scaling and probes.")] = 0,
    plot: Annotated[Path | None, typer.Option("--plot", help="Draw a timeline PNG.")] = None,
    timeline: Annotated[
        bool, typer.Option("--timeline/--no-timeline", help="Include the timeline in JSON.")
    ] = False,
    start: Annotated[
        str | None,
        typer.Option(
            "--start",
            help="Replay from this moment of the trace (MM:SS, HH:MM:SS or seconds; default 0).",
        ),
    ] = None,
    duration: Annotated[
        str | None,
        typer.Option(
            "--duration",
            help="Replay this long from --start (MM:SS, HH:MM:SS or seconds; default: to the end).",
        ),
    ] = None,
    explain: Annotated[
        str | None,
        typer.Option(
            "--explain",
            help="Print tokenscale's decision at this moment of the replay (MM:SS, HH:MM:SS or "
            "seconds, counted from --start as --fault's): every signal, the forecast and the "
            "lead time.",
        ),
    ] = None,
    fault: Annotated[
        list[str] | None,
        typer.Option(
            "--fault",
            help="A fault drill, KIND@MM:SS (repeatable; the moment counted from --start, as "
            "--explain's): replica-loss, cache-flush, traffic-x2, retry-storm, long-burst. The "
            "report compares the run with and without them.",
        ),
    ] = None,
    stockout: Annotated[
        list[str] | None,
        typer.Option(
            "--stockout",
            help="A spec with spec.hardware.variants: VARIANT@MM:SS[-MM:SS] (repeatable): from "
            "then (until then) no new replica of that variant can be placed; its new pods stay "
            "Pending, as in a stockout of that GPU type.",
        ),
    ] = None,
    architectures: Annotated[
        bool,
        typer.Option(
            "--architectures",
            help="Instead of policies: the smallest static fleet of each architecture (one pool, "
            "or prefill and decode pools) meeting the SLO, against the planner's auto choice.",
        ),
    ] = False,
) -> None:
    """Replay a trace against a simulated vLLM fleet; compare scaling policies."""
    from rich.console import Console  # noqa: PLC0415
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text  # noqa: PLC0415

    # the simulator, the models and the planner load only when it runs: `--help` stays fast
    from tokenscale.api.errors import SpecError  # noqa: PLC0415
    from tokenscale.cli.console import stdout_console  # noqa: PLC0415
    from tokenscale.cli.model_source import model_source_for  # noqa: PLC0415
    from tokenscale.planning.validate import validate_manifests  # noqa: PLC0415
    from tokenscale.simulation import (  # noqa: PLC0415
        POLICIES,
        Setup,
        SimOptions,
        SimulationError,
        TraceError,
        parse_trace,
        scale_trace,
        simulate,
    )
    from tokenscale.simulation.faults import parse_fault  # noqa: PLC0415
    from tokenscale.simulation.run import ORACLE_ROUNDS  # noqa: PLC0415
    from tokenscale.simulation.span import (  # noqa: PLC0415
        check_size,
        check_span,
        cut_idle_gaps,
    )
    from tokenscale.simulation.window import window  # noqa: PLC0415

    if arrival_unit not in ("s", "ms"):
        raise bad_input(f"--arrival-unit {arrival_unit!r}: use s or ms")
    check_number("--time-scale", time_scale, above=0, maximum=1e6)
    check_number("--rate-scale", rate_scale, above=0, maximum=1000)
    check_number("--mismatch", mismatch, above=0, maximum=100)
    check_number("--cold-start", cold_start, minimum=0, maximum=86_400)
    # At least 1 s: the simulator decides (and scrapes) at every interval across the replay, so a
    # 1 ms interval turns a day's trace into 86 million decisions; Prometheus scrapes no faster.
    check_number("--scrape-interval", scrape_interval, minimum=1, maximum=3600)
    check_number("--interval", interval, minimum=1, maximum=3600)
    check_number("--queue-target", queue_target, above=0, maximum=1e6)
    check_number("--kv-target", kv_target, above=0, maximum=1)
    if plot is not None and not plot.parent.is_dir():
        raise bad_input(f"--plot {plot}: the folder {plot.parent} does not exist; create it")
    explain_at = None if explain is None else _moment(explain)
    start_s = 0.0 if start is None else _moment(start, "--start")
    duration_s = None if duration is None else _moment(duration, "--duration")
    fmt_out = output.value
    try:
        faults = tuple(parse_fault(f) for f in fault or [])
    except ValueError as exc:
        raise bad_input(str(exc)) from exc
    if faults and policy in (PolicyChoice.best_static, PolicyChoice.all):
        raise bad_input(
            f"--fault with --policy {policy.value}: drill one policy that scales or holds a "
            "fleet (tokenscale, static, oracle, queue-threshold, kv-threshold)"
        )
    text, trace_text = read_input(file, fmt_out), read_input(trace, fmt_out)
    try:
        services = validate_manifests(text, model_source_for(file))
    except SpecError as err:
        fail_invalid(err, file, fmt_out)
    if not services:
        raise bad_input(f"{file} holds no InferenceService")
    isvc = services[0]
    targets = (queue_target != QUEUE_TARGET, kv_target != KV_TARGET)
    pd_plan = _shape_checked(
        isvc,
        file,
        policy,
        (fault, explain, plot, timeline, architectures, bool(stockout)),
        targets,
        fmt_out,
    )
    fmt: TraceFormat = trace_format.value
    unit = cast(Literal["s", "ms"], arrival_unit)
    try:
        opts = SimOptions(
            mismatch=mismatch,
            cold_start_s=cold_start,
            scrape_interval_s=scrape_interval,
            decision_interval_s=interval,
            queue_target=queue_target,
            kv_target=kv_target,
            seed=seed,
            oracle_repair_rounds=ORACLE_ROUNDS,
        )
        parsed = parse_trace(
            trace_text,
            fmt,
            _columns(columns),
            unit,
            source=trace.name,
        )
        cut = cut_idle_gaps(window(parsed, start_s, duration_s))
        for note in cut.notes:
            warn(note)
        check_span(cut.trace, time_scale)
        check_size(cut.trace, rate_scale)
        scaled = scale_trace(cut.trace, time_scale, rate_scale, seed)
        end_s = scaled.duration_s
        late = [text for f, text in zip(faults, fault or [], strict=True) if f.at_s > end_s]
        if late:
            raise bad_input(
                f"--fault {late[0]}: the replay's last request arrives at {_clock(end_s)}"
                f"{_from_start(start)}; a fault after it drills nothing: use a moment from 0:00 "
                f"to {_clock(end_s)}"
            )
        if isvc.spec.serving.splits_by_length:  # one pool per class, against one shared pool
            from tokenscale.cli.simulate_length import length_replay, print_length  # noqa: PLC0415

            replayed, smallest = length_replay(isvc, scaled, opts, policy.value)
            title = (
                f"{isvc.metadata.name}: {trace.name}, {len(scaled.requests):,} requests, length "
                f"classes ({policy.value}) against one shared pool"
            )
            print_length(replayed, title, output == TableOrJson.json, timeline, smallest)
            return
        if isvc.spec.hardware.is_mix:  # several GPU types: mixed fleets
            from tokenscale.cli.simulate_mix import (  # noqa: PLC0415
                autoscaled_runs,
                mixed_runs,
                parse_stockout,
                print_mixed,
            )

            try:
                outs = [parse_stockout(text, _moment) for text in stockout or []]
            except ValueError as exc:
                raise bad_input(str(exc)) from exc
            late = [t for o, t in zip(outs, stockout or [], strict=True) if o.from_s > end_s]
            if late:
                raise bad_input(
                    f"--stockout {late[0]}: the replay's last request arrives at "
                    f"{_clock(end_s)}; a stockout after it changes nothing: use a moment from "
                    f"0:00 to {_clock(end_s)}"
                )
            runs = mixed_runs(isvc, scaled, mismatch)
            scaled_runs = (
                autoscaled_runs(
                    isvc, scaled, mismatch, cold_start, scrape_interval, interval, outs, timeline
                )
                if policy in (PolicyChoice.tokenscale, PolicyChoice.all)
                else []
            )
            title = f"{isvc.metadata.name}: {trace.name}, {len(scaled.requests):,} requests"
            print_mixed(runs, output == TableOrJson.json, title, scaled_runs)
            return
        if stockout:
            raise bad_input(
                "--stockout applies to a spec with spec.hardware.variants (several GPU types); "
                f"{file} has one GPU type: drop --stockout"
            )
        if architectures:
            from tokenscale.cli.simulate_pd import print_comparison, scaled_pools  # noqa: PLC0415
            from tokenscale.simulation.disaggregated import compare  # noqa: PLC0415

            found = compare(isvc.spec, scaled, mismatch, isvc.metadata.name)
            per_role = scaled_pools(
                isvc.spec, scaled, mismatch, isvc.metadata.name, cold_start, scrape_interval,
                interval,
            )  # fmt: skip
            title = f"{isvc.metadata.name}: {trace.name}, {len(scaled.requests):,} requests"
            print_comparison(stdout_console(), found, title, output == TableOrJson.json, per_role)
            return
        if pd_plan is not None:  # prefill/decode pools: what the operator runs, per role
            _per_role(
                isvc.metadata.name,
                pd_plan,
                isvc,
                scaled,
                trace.name,
                output,
                timeline,
                explain,
                explain_at,
                plot,
                (mismatch, cold_start, scrape_interval, interval),
            )
            return
        names: list[PolicyName] = (
            list(POLICIES) if policy == PolicyChoice.all else [cast("PolicyName", policy.value)]
        )
        stderr = Console(stderr=True)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            console=stderr,
            transient=True,
            disable=not stderr.is_terminal,
        ) as bar:
            task = bar.add_task(
                "probing one replica's capacity, verifying the oracle", total=len(names) + 2
            )
            setup = Setup(isvc.spec, scaled, opts, isvc.metadata.name)
            for message in setup.warnings:
                warn(message)
            bar.update(task, completed=1)
            if faults:
                bar.update(task, description="drilling the faults")
                _drill(setup, faults, names[0], output, timeline, plot)
                return
            results: list[SimResult] = []
            for k, name in enumerate(names):
                bar.update(task, description=f"simulating {name}")

                def advance(fraction: float, done: int = 1 + k) -> None:
                    bar.update(task, completed=done + fraction)

                at = explain_at if name == "tokenscale" else None
                results.append(simulate(setup, name, advance, at))
            bar.update(task, description="replaying the yardsticks and the static frontier")
            results = _with_yardsticks(setup, results)
    except SimulationError as exc:
        # a plan that cannot serve is exit 1 (as for `plan`), not bad input
        Console(stderr=True).print(
            Text.assemble(("error:", "red"), f" {isvc.metadata.name}: {exc}"),
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1) from exc
    except (TraceError, ValueError) as exc:
        raise bad_input(str(exc), fmt_out) from exc
    best = next((r for r in results if r.policy == "best-static"), None)
    if best is not None:
        results = [r.model_copy(update={"best_static_gpu_hours": best.gpu_hours}) for r in results]
    if plot is not None:
        from tokenscale.cli.plot import draw_timeline  # noqa: PLC0415 (matplotlib is slow to import)

        draw_timeline(results, isvc.spec.slo, plot)
    if output == TableOrJson.json:
        data = [
            r.model_dump(mode="json", exclude=None if timeline else {"timeline"}) for r in results
        ]
        print(json.dumps(_no_nan(data[0] if len(data) == 1 else data), indent=2))
        return
    console = stdout_console()
    stats = f"{len(scaled.requests):,} requests over {scaled.duration_s / 60:.1f} min"
    if start is not None or duration is not None:
        stats += f" from {_clock(start_s)}"
    console.print(
        policy_table(
            results,
            f"{isvc.metadata.name}: {trace.name} ({stats}, time ×{time_scale:g}, "
            f"rate ×{rate_scale:g}) · mismatch {mismatch:g} · cold start {cold_start:g} s",
        )
    )
    r0 = results[0]
    w = isvc.spec.workload
    trace_in, trace_out = _token_means(scaled)
    console.print(
        f"one replica sustains {r0.sustainable_rps_per_replica:.2f} req/s at the SLOs in "
        f"simulation on the trace's requests (mean {trace_in:,.0f} in / {trace_out:,.0f} out); "
        f"the planner's {r0.planner_rps_per_replica:.2f} is for the spec's token mix (mean "
        f"{w.input_tokens.mean:,.0f} in / {w.output_tokens.mean:,.0f} out)",
        highlight=False,
    )
    console.print(yardsticks_text(r0), highlight=False)
    ours = next((r for r in results if r.frontier is not None), None)
    if ours is not None and ours.frontier is not None:
        console.print(frontier_text(ours, ours.frontier), highlight=False)
    for r in results:
        if r.arrived_at_zero and r.wake_ttft_max_s is not None:  # minReplicas 0
            console.print(
                f"{r.policy}: {r.arrived_at_zero:,} requests found the fleet at zero replicas "
                f"and waited for a wake: worst TTFT {r.wake_ttft_max_s:.1f} s (cold start "
                f"{cold_start:g} s)",
                highlight=False,
            )
    for r in results:
        for c in r.classes:  # spec.workload.classes: per priority (the trace's `priority`)
            if c.requests == 0:
                console.print(
                    f"{r.policy}: {c.classes} (priority {c.priority}): no request of this "
                    "priority in the trace (a CSV trace's priority column)",
                    highlight=False,
                )
                continue
            attained = (
                "no SLO (sheddable)"
                if c.slo_attainment is None
                else f"{c.slo_attainment:.2%} of its requests within its SLO"
            )
            console.print(
                f"{r.policy}: {c.classes} (priority {c.priority}): {c.completed:,} of "
                f"{c.requests:,} served, {c.shed:,} shed · {attained} · TTFT P99 "
                f"{c.ttft_p99_s:.3g} s · E2E P99 {c.e2e_p99_s:.3g} s · {c.gpu_hours:.3g} GPU-h",
                highlight=False,
            )
    if plot is not None:
        console.print(f"timeline written to {plot}", highlight=False)
    if explain_at is not None:
        explained = next((r.explanation for r in results if r.explanation is not None), None)
        if explained is None:
            console.print(
                f"--explain {explain}: no tokenscale decision at or after that moment "
                f"(the replay ends at {_clock(scaled.duration_s)}{_from_start(start)})",
                highlight=False,
            )
        else:
            console.print(explanation_text(explained), highlight=False)


def _shape_checked(
    isvc: InferenceService,
    file: Path,
    policy: PolicyChoice,
    flags: tuple[list[str] | None, str | None, Path | None, bool, bool, bool],
    targets: tuple[bool, bool],
    fmt_out: str,
) -> Plan | None:
    """Exit 2 for a flag the spec's fleet shape cannot replay (``cli/simulate_shapes.py``);
    the plan when the operator would run prefill/decode pools (the default replay then)."""
    from tokenscale.api.errors import SpecError  # noqa: PLC0415
    from tokenscale.cli.simulate_pd import two_pool_plan  # noqa: PLC0415
    from tokenscale.cli.simulate_shapes import Shape, refuse_unsupported  # noqa: PLC0415

    fault, explain, plot, timeline, architectures, stockout = flags
    spec = isvc.spec
    pd_plan = None
    shape: Shape = "pool"
    if spec.serving.splits_by_length:
        if spec.hardware.is_mix:
            raise bad_input(
                "simulate does not replay length classes over a GPU mix (spec.hardware."
                "variants): each class plans its own mix; `tokenscale plan` sizes it. Replay one "
                "GPU type (spec.hardware.gpu) for the classes, or remove spec.serving."
                "lengthClasses to replay the mix"
            )
        shape = "length"
    elif spec.hardware.is_mix:
        shape = "mix"
    elif architectures:
        shape = "architectures"
    else:
        try:
            pd_plan = two_pool_plan(spec, isvc.metadata.name)
        except SpecError as err:
            fail_invalid(err, file, fmt_out)
        shape = "pd" if pd_plan is not None else "pool"
    given = {
        "--fault": bool(fault),
        "--explain": explain is not None,
        "--plot": plot is not None,
        "--timeline": timeline,
        "--architectures": architectures,
        "--queue-target": targets[0],
        "--kv-target": targets[1],
        "--stockout": stockout,
    }
    refuse_unsupported(shape, given, policy.value, fmt_out == "json")
    return pd_plan


def _per_role(
    name: str,
    plan: Plan,
    isvc: InferenceService,
    scaled: Trace,
    trace_name: str,
    output: TableOrJson,
    timeline: bool,
    explain: str | None,
    explain_at: float | None,
    plot: Path | None,
    timing: tuple[float, float, float, float],
) -> None:
    """Replay and print prefill/decode pools scaled per role (``cli/simulate_pd.py``)."""
    from tokenscale.cli.console import stdout_console  # noqa: PLC0415
    from tokenscale.cli.simulate_pd import draw_roles, per_role_run, print_per_role  # noqa: PLC0415

    mismatch, cold_start, scrape_interval, interval = timing
    run = per_role_run(isvc.spec, plan, scaled, mismatch, cold_start, scrape_interval, interval)
    if plot is not None:
        draw_roles(run, plan, plot)
    title = f"{name}: {trace_name}, {len(scaled.requests):,} requests, prefill/decode pools"
    why = None if explain is None or explain_at is None else (explain, explain_at)
    print_per_role(plan, run, title, output == TableOrJson.json, timeline, why)
    if plot is not None and output != TableOrJson.json:
        stdout_console().print(f"timeline written to {plot}", highlight=False)


def _hours(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.2f}"


def _token_means(trace: Trace) -> tuple[float, float]:
    n = max(len(trace.requests), 1)
    return (
        sum(r.input_tokens for r in trace.requests) / n,
        sum(r.output_tokens for r in trace.requests) / n,
    )


def _drill(
    setup: Setup,
    faults: tuple[Fault, ...],
    name: PolicyName,
    output: TableOrJson,
    timeline: bool,
    plot: Path | None,
) -> None:
    """Run and print the drills (and, with a replica loss, the redundancy advice); with
    ``plot``, draw the run with and without the faults."""
    from tokenscale.cli.console import stdout_console  # noqa: PLC0415
    from tokenscale.cli.drill_view import drill_data, print_drill  # noqa: PLC0415
    from tokenscale.simulation.drills import drill, recommend_redundancy  # noqa: PLC0415

    d = drill(setup, faults, name)
    loss = next((f for f in faults if f.kind == "replica-loss"), None)
    advice = None if loss is None else recommend_redundancy(setup, loss.at_s)
    if plot is not None:
        from tokenscale.cli.plot import draw_timeline  # noqa: PLC0415 (matplotlib is slow)

        kinds = ", ".join(sorted({f.kind for f in faults}))
        names = [f"{name} without the faults", f"{name} with {kinds}"]
        draw_timeline([d.baseline, d.faulted], setup.spec.slo, plot, names)
    if output == TableOrJson.json:
        print(json.dumps(_no_nan(drill_data(d, advice, timeline)), indent=2))
        return
    print_drill(stdout_console(), d, advice)
    if plot is not None:
        stdout_console().print(f"timeline written to {plot}", highlight=False)


def _moment(text: str, flag: str = "--explain") -> float:
    """``MM:SS``, ``HH:MM:SS`` or plain seconds → seconds into the trace (exit 2 otherwise)."""
    from tokenscale.simulation.faults import moment_seconds  # noqa: PLC0415

    seconds = moment_seconds(text)
    if seconds is None:
        raise bad_input(
            f"{flag} {text!r}: use MM:SS, HH:MM:SS (minutes and seconds below 60) or seconds "
            "(e.g. 12:30)"
        )
    return seconds


def _from_start(start: str | None) -> str:
    """`` (moments count from --start 10:00)`` when the replay does not start at 0:00."""
    return "" if start is None else f" (moments count from --start {start}, the replay's 0:00)"


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _g(value: float | None) -> str:
    """Three significant figures (``0.324``, ``12.5``, ``1.2e+03``), ``–`` for none."""
    return "–" if value is None else f"{value:.3g}"


def explanation_text(e: Explanation) -> str:
    """The decision at one moment, every signal, the forecast and the lead time, as text."""
    d = e.decision
    lines = [
        f"at {_clock(e.t_s)} ({e.t_s:.0f} s): {d.replicas} replicas asked "
        f"({e.replicas_ready} ready, {e.replicas_starting} starting) · source {d.source}",
        f"  cause: {d.cause.value} ({d.cause.words}): {d.why}",
        f"  model needs: {d.model_replicas} · calibration {d.calibration:.3g} · metrics "
        f"{'ok' if d.metrics_available else 'unavailable: ' + d.metrics_reason}",
        "  signals:",
    ]
    for sig in d.signals:
        value = "–" if sig.value is None else f"{sig.value:.4g}"
        lines.append(
            f"    {sig.name:<20} {value:>9}  high {sig.high:<8g} low {sig.low:<8g} "
            f"{sig.level:<7} → {sig.replicas}  ({sig.reason})"
        )
    look = d.outlook
    if look is None:
        lines.append("  forecast: none (no request rate in this snapshot)")
    else:
        lead = "measured" if look.lead_time_measured else "default, no replica started yet"
        lines += [
            f"  forecast: observed {look.observed_rps:.2f} req/s → expected "
            f"{look.expected_rps:.2f} req/s in {look.horizon_s:.0f} s",
            f"  lead time: {look.lead_time_s:.0f} s ({lead}) + one decision interval",
            f"  burst headroom: ×{look.burst_headroom:.2f} → the forecast asks for "
            f"{look.replicas if look.replicas is not None else '–'} replicas",
        ]
    if d.dispersion is not None:
        lines.append(f"  arrivals: ×{d.dispersion.room:.2f} · {d.dispersion.reason}")
    snap = e.snapshot
    if snap is not None:
        lines.append(
            f"  snapshot: {snap.replicas_reporting} reporting · waiting {_g(snap.waiting)} · "
            f"running {_g(snap.running)} · KV max {_g(snap.kv_usage_max)} · TTFT P99 "
            f"{_g(snap.ttft_p99_s)} s · TPOT P99 {_g(snap.tpot_p99_s)} s"
        )
    lines += [f"  diagnosis: {x}" for x in d.diagnosis]
    return "\n".join(lines)


def _no_nan(value: Any) -> Any:
    """JSON has no NaN: a statistic with no requests behind it is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value


def _with_yardsticks(setup: Setup, results: list[SimResult]) -> list[SimResult]:
    """Every result with the oracles' replayed attainment (the lead-time oracle replayed at
    this cold start unless it ran), tokenscale's with the static frontier and its verdict."""
    from tokenscale.simulation import simulate  # noqa: PLC0415
    from tokenscale.simulation.frontier import static_frontier  # noqa: PLC0415

    lead = next((r for r in results if r.policy == "oracle-lead-time"), None)
    if lead is None:
        lead = simulate(setup, "oracle-lead-time")
    update: dict[str, Any] = {
        "oracle_attainment": setup.oracle_replayed(),
        "lead_time_oracle_attainment": lead.slo_attainment,
    }
    out = []
    for r in results:
        extra = {"frontier": static_frontier(setup, r)} if r.policy == "tokenscale" else {}
        out.append(r.model_copy(update=update | extra))
    return out


def _att(share: float | None) -> str:
    return "–" if share is None else f"{share * 100:.2f} %"


def yardsticks_text(r: SimResult) -> str:
    """The oracles, each with its replayed attainment against the target."""
    target = r.target_attainment

    def said(share: float | None) -> str:
        if share is None:
            return "not replayed"
        if share >= target - 1e-9:
            return f"replayed {_att(share)} ≥ the {_att(target)} target"
        return f"replayed {_att(share)}: MISSES the {_att(target)} target"

    formula = r.oracle_formula_gpu_hours
    before = (
        ""
        if formula is None or abs(formula - r.oracle_gpu_hours) < 5e-3
        else f"; the per-minute formula alone: {formula:.2f}"
    )
    return (
        f"oracle {r.oracle_gpu_hours:.2f} GPU-hours (hindsight, no cold start, repaired per "
        f"minute; {said(r.oracle_attainment)}{before}); lead-time oracle "
        f"{_hours(r.lead_time_oracle_gpu_hours)} GPU-hours (each replica started one cold start "
        f"ahead; {said(r.lead_time_oracle_attainment)})"
    )


def frontier_text(ours: SimResult, f: Frontier) -> str:
    """Every fixed fleet up to best static beside tokenscale, and the verdict."""
    lines = [
        f"static frontier (every fixed fleet up to best static, {f.best_static_replicas}; "
        f"target {_att(f.target_attainment)}):"
    ]
    for p in f.points:
        shown = _att(p.slo_attainment) if p.complete else f"< {_att(p.slo_attainment)}"
        lines.append(f"  {'fixed ' + str(p.replicas):<10} {shown:>9}  {p.gpu_hours:8.2f} GPU-hours")
    lines.append(
        f"  {ours.policy:<10} {_att(ours.slo_attainment):>9}  {ours.gpu_hours:8.2f} GPU-hours: "
        f"{f.verdict}"
    )
    return "\n".join(lines)
