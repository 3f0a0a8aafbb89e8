"""``tokenscale bench --url URL --model NAME``: load-test an endpoint, print it, save a profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tokenscale.cli.inputs import TableOrJson, bad_input, check_number, read_input

if TYPE_CHECKING:
    from rich.table import Table

    from tokenscale.bench import BenchProfile


def _concurrency(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise bad_input(f"--concurrency {text!r}: expected integers like 1,2,4,8") from exc
    if not values or min(values) < 1 or max(values) > 100_000:
        raise bad_input(f"--concurrency {text!r}: expected integers 1..100000 like 1,2,4,8")
    return values


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value * 1000:,.0f}"


def profile_table(p: BenchProfile) -> Table:
    from rich.table import Table  # noqa: PLC0415

    table = Table(title=f"{p.model} at {p.url}" + ("" if p.complete else " (partial)"))
    for col in (
        "phase",
        "conc.",
        "req",
        "err/t.o.",
        "TTFT P50/P99 ms",
        "TPOT P50/P99 ms",
        "E2E P99 s",
        "out tok/s",
        "in tok/s",
        "queue",
        "KV max",
    ):
        table.add_column(
            col,
            justify="left" if col == "phase" else "right",
            overflow="fold",
            no_wrap=col == "phase",
        )
    for s in p.steps:
        mark = " ◀ knee" if s.phase == "ramp" and s.concurrency == p.knee_concurrency else ""
        table.add_row(
            s.phase + mark,
            "–" if s.concurrency is None else str(s.concurrency),
            str(s.requests),
            f"{s.errors}/{s.timeouts}",
            f"{_ms(s.ttft_p50_seconds)} / {_ms(s.ttft_p99_seconds)}",
            f"{_ms(s.tpot_p50_seconds)} / {_ms(s.tpot_p99_seconds)}",
            "–" if s.e2e_p99_seconds is None else f"{s.e2e_p99_seconds:.2f}",
            f"{s.output_tps:,.0f}",
            f"{s.input_tps:,.0f}",
            "–" if s.waiting_mean is None else f"{s.waiting_mean:.1f}",
            "–" if s.kv_usage_max is None else f"{s.kv_usage_max:.2f}",
        )
    return table


def bench_command(
    url: Annotated[str, typer.Option(help="Base URL of the OpenAI-compatible server.")],
    model: Annotated[str, typer.Option(help="Model name the server serves.")],
    concurrency: Annotated[str, typer.Option(help="Ramp steps.")] = "1,2,4,8,16,32,64",
    input_tokens: Annotated[int, typer.Option(help="Prompt tokens (baseline, ramp).")] = 1000,
    output_tokens: Annotated[int, typer.Option(help="Output tokens (baseline, ramp).")] = 200,
    step_requests: Annotated[int, typer.Option(help="Request cap per step.")] = 200,
    step_seconds: Annotated[float, typer.Option(help="Time cap per step.")] = 60.0,
    baseline_requests: Annotated[int, typer.Option(help="Single requests first.")] = 5,
    mix: Annotated[bool, typer.Option("--mix/--no-mix", help="Long/short mix phase.")] = True,
    mix_requests: Annotated[int, typer.Option(help="Request cap of the mix.")] = 100,
    trace: Annotated[
        Path | None, typer.Option(help="Replay this trace (simulator formats).")
    ] = None,
    replay_rps: Annotated[
        float | None, typer.Option(help="Replay at this mean rate (default: the trace's).")
    ] = None,
    replay_seconds: Annotated[float, typer.Option(help="Time cap of the replay.")] = 120.0,
    timeout: Annotated[float, typer.Option(help="Seconds per request.")] = 120.0,
    slo_ttft: Annotated[float | None, typer.Option(help="TTFT P99 SLO, seconds.")] = None,
    slo_tpot: Annotated[float | None, typer.Option(help="TPOT P99 SLO, seconds.")] = None,
    gpu: Annotated[str | None, typer.Option(help="Recorded in the profile.")] = None,
    tp: Annotated[int | None, typer.Option(help="Tensor-parallel size, recorded.")] = None,
    engine_version: Annotated[str | None, typer.Option(help="Recorded in the profile.")] = None,
    output: Annotated[TableOrJson, typer.Option("-o", "--output")] = TableOrJson.table,
    profile_out: Annotated[
        Path | None, typer.Option(help="Write the profile (.json, or .yaml/.yml).")
    ] = None,
    plot: Annotated[Path | None, typer.Option(help="Draw throughput/latency curves.")] = None,
    plan_file: Annotated[
        Path | None,
        typer.Option(
            "--plan",
            help="An InferenceService manifest: print (and plot) the planner's predicted curve "
            "beside the measured one, with the error per step.",
        ),
    ] = None,
) -> None:
    """Load-test an OpenAI-compatible endpoint: baseline, concurrency ramp, mix, replay."""
    # the load generator (aiohttp) and the planner load only when bench runs: `plan` stays fast
    from asyncio import run as asyncio_run  # noqa: PLC0415

    import yaml  # noqa: PLC0415
    from rich.console import Console  # noqa: PLC0415
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text  # noqa: PLC0415

    from tokenscale.bench import (  # noqa: PLC0415
        BenchConfig,
        BenchState,
        EndpointError,
        partial_profile,
        run_bench,
    )
    from tokenscale.cli.bench_compare import (  # noqa: PLC0415
        comparison_rows,
        comparison_table,
        load_plan,
        predictions,
    )
    from tokenscale.simulation import TraceError, parse_trace, scale_trace  # noqa: PLC0415

    for flag, value, low in (
        ("--input-tokens", input_tokens, 1),
        ("--output-tokens", output_tokens, 1),
        ("--step-requests", step_requests, 1),
        ("--baseline-requests", baseline_requests, 0),
        ("--mix-requests", mix_requests, 1),
    ):
        check_number(flag, value, minimum=low, maximum=10_000_000)
    if tp is not None:
        check_number("--tp", tp, minimum=1, maximum=64)
    check_number("--step-seconds", step_seconds, above=0, maximum=86_400)
    check_number("--replay-seconds", replay_seconds, above=0, maximum=86_400)
    check_number("--timeout", timeout, above=0, maximum=86_400)
    for flag, slo in (("--slo-ttft", slo_ttft), ("--slo-tpot", slo_tpot)):
        if slo is not None:
            check_number(flag, slo, above=0, maximum=86_400)
    if replay_rps is not None:
        check_number("--replay-rps", replay_rps, above=0, maximum=1_000_000)
    for flag, out in (("--profile-out", profile_out), ("--plot", plot)):
        if out is not None and not out.parent.is_dir():
            raise bad_input(f"{flag} {out}: the folder {out.parent} does not exist; create it")
    if profile_out is not None and profile_out.suffix not in (".json", ".yaml", ".yml"):
        raise bad_input(f"--profile-out {profile_out}: name a .json, .yaml or .yml file")
    under_test = load_plan(plan_file) if plan_file is not None else None
    replay: list[tuple[float, int, int]] = []
    if trace is not None:
        try:
            parsed = parse_trace(read_input(trace), source=trace.name)
            if replay_rps is not None:
                mean = len(parsed.requests) / max(parsed.duration_s, 1e-9)
                parsed = scale_trace(parsed, time_scale=mean / replay_rps)
        except TraceError as exc:
            raise bad_input(str(exc)) from exc
        replay = [(r.arrival_s, r.input_tokens, r.output_tokens) for r in parsed.requests]
    cfg = BenchConfig(
        url=url,
        model=model,
        concurrency=_concurrency(concurrency),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        step_requests=step_requests,
        step_seconds=step_seconds,
        baseline_requests=baseline_requests,
        mix=mix,
        mix_requests=mix_requests,
        replay=replay,
        replay_seconds=replay_seconds,
        request_timeout_s=timeout,
        slo_ttft_p99_seconds=slo_ttft,
        slo_tpot_p99_seconds=slo_tpot,
        gpu=gpu,
        tensor_parallel_size=tp,
        engine_version=engine_version,
    )
    state = BenchState()
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
        task = bar.add_task("probing the endpoint", total=1.0)

        def progress(what: str, fraction: float) -> None:
            bar.update(task, description=what, completed=fraction)

        try:
            profile = asyncio_run(run_bench(cfg, state, progress))
        except KeyboardInterrupt:
            profile = partial_profile(cfg, state)
        except EndpointError as exc:
            if exc.bad_input:
                raise bad_input(str(exc)) from exc
            stderr.print(
                Text.assemble(("error:", "red"), " ", str(exc)), highlight=False, soft_wrap=True
            )
            raise typer.Exit(1) from exc
    if profile_out is not None:
        data = profile.model_dump(mode="json", by_alias=True)
        text = (
            yaml.safe_dump(data, sort_keys=False)
            if profile_out.suffix in (".yaml", ".yml")
            else json.dumps(data, indent=2)
        )
        profile_out.write_text(text)
    predicted = predictions(under_test, profile) if under_test is not None else []
    rows = comparison_rows(profile, predicted)
    if plot is not None:
        from tokenscale.cli.plot import draw_bench  # noqa: PLC0415 (matplotlib is slow to import)

        draw_bench(profile, plot, predicted)
    if output == TableOrJson.json:
        data = profile.model_dump(mode="json", by_alias=True)
        if under_test is not None:
            data["planComparison"] = rows
        print(json.dumps(data, indent=2))
    else:
        console = Console()
        console.print(profile_table(profile))
        op = profile.operating_concurrency
        console.print(
            f"knee at concurrency {profile.knee_concurrency}; "
            + (
                f"operating point meeting the SLOs: concurrency {op}"
                if op is not None
                else "no SLO given or no step met it"
            ),
            highlight=False,
        )
        for note in profile.notes:
            console.print(f"note: {note}", highlight=False, markup=False)
        if under_test is not None:
            console.print(comparison_table(under_test, rows))
    if not profile.steps or all(s.requests == 0 for s in profile.steps):
        why = next((n for n in profile.notes if "no request succeeded" in n), "no step ran")
        stderr.print(Text.assemble(("error:", "red"), " ", why), highlight=False, soft_wrap=True)
        raise typer.Exit(1)
