"""``tokenscale``: plan (offline sizing), catalog. Exit codes: 0 ok, 1 infeasible, 2 bad input."""

import enum
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_manifests
from tokenscale.catalog import GPU_CATALOG, MODEL_CATALOG, count_params
from tokenscale.cli.plan_view import dumps, print_plans, sweep_table, to_data
from tokenscale.planning import plan_service, sweep

app = typer.Typer(
    help="Size and scale vLLM inference fleets from first principles and live metrics.",
    no_args_is_help=True,
    add_completion=False,
)


class Output(enum.StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


def _fail(err: SpecError, file: Path) -> None:
    console = Console(stderr=True)
    console.print(f"[red]error:[/] {file} is not a valid InferenceService:", highlight=False)
    for issue in err.issues:
        console.print(f"  {issue.path}: {issue.message}", highlight=False, markup=False)
    raise typer.Exit(2)


def _read(file: Path) -> str:
    try:
        return sys.stdin.read() if str(file) == "-" else file.read_text()
    except OSError as exc:
        Console(stderr=True).print(f"[red]error:[/] cannot read {file}: {exc.strerror}")
        raise typer.Exit(2) from exc


@app.command()
def plan(
    file: Annotated[Path, typer.Argument(help="InferenceService manifest (YAML, '-' for stdin).")],
    output: Annotated[Output, typer.Option("-o", "--output", help="Output format.")] = Output.table,
    do_sweep: Annotated[
        bool, typer.Option("--sweep", help="Compare GPUs × TP × weight dtype.")
    ] = False,
    top: Annotated[int, typer.Option(help="Rows to show with --sweep (table).")] = 25,
) -> None:
    """Plan each InferenceService in FILE: memory, KV, latency vs SLO, replicas, cost."""
    try:
        services = parse_manifests(_read(file))
        if not services:
            Console(stderr=True).print(f"[red]error:[/] no InferenceService in {file}")
            raise typer.Exit(2)
        if do_sweep:
            results = [(s, sweep(s.spec, name=s.metadata.name)) for s in services]
        else:
            plans = [plan_service(s.spec, s.metadata.name) for s in services]
    except SpecError as err:
        _fail(err, file)
        return
    console = Console(width=160)
    if do_sweep:
        if output is Output.table:
            for _, rows in results:
                console.print(sweep_table(rows, top))
        else:
            data = [
                {
                    "name": s.metadata.name,
                    "rows": [
                        {
                            "gpu": r.gpu,
                            "tensor_parallel_size": r.tensor_parallel_size,
                            "weight_dtype": r.weight_dtype,
                            "error": r.error,
                            "plan": r.plan.model_dump(mode="json") if r.plan else None,
                        }
                        for r in rows
                    ],
                }
                for s, rows in results
            ]
            typer.echo(dumps(data[0] if len(data) == 1 else data, output.value))
        return
    if output is Output.table:
        print_plans(console, plans)
    else:
        typer.echo(dumps(to_data(plans), output.value))
    if not all(p.feasible for p in plans):
        raise typer.Exit(1)


@app.command()
def catalog() -> None:
    """List the built-in GPUs and models with their sources."""
    console = Console(width=160)
    gpus = Table(title="GPUs (dense peaks)")
    for col in (
        "key",
        "memory GiB",
        "HBM GB/s",
        "BF16 TFLOPS",
        "FP8 TFLOPS",
        "link GB/s",
        "source",
    ):
        gpus.add_column(col)
    for key, e in GPU_CATALOG.items():
        s = e.spec
        gpus.add_row(
            key,
            f"{s.memory_gib:g}",
            f"{s.hbm_bandwidth_gbps:g}",
            f"{s.bf16_tflops:g}",
            f"{s.fp8_tflops or 0:g}",
            f"{s.interconnect_gbps or 0:g}",
            e.source,
        )
    models = Table(title="Models")
    for col in ("key", "params (derived / published)", "active", "layers", "KV heads", "source"):
        models.add_column(col)
    for key, m in MODEL_CATALOG.items():
        a = m.architecture
        c = count_params(a)
        kv = "MLA" if a.is_mla else str(a.effective_kv_heads)
        models.add_row(
            key,
            f"{c.total / 1e9:,.2f} B / {m.published_params / 1e9:,.2f} B",
            f"{c.active / 1e9:,.2f} B",
            str(a.layers),
            kv,
            m.source,
        )
    console.print(gpus)
    console.print(models)


def main() -> None:
    app()
