"""``tokenscale bench … --plan FILE``: the planner's predicted curve beside the measured one.

For every ramp step that finished requests, the model is asked for the same closed-loop load
(the step's concurrency and its measured token means) on a replica of the plan's TP and chunk
budget; the table prints both and the error, so a user can check the model on their own
endpoint in one command.
"""

from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.bench import BenchProfile
from tokenscale.cli.inputs import bad_input, read_input
from tokenscale.cli.model_source import model_source_for
from tokenscale.planning import Plan, plan_service, predicted_step, resolve
from tokenscale.planning.result import CurveStep
from tokenscale.planning.validate import validate_manifests

COMPARED = (
    ("TTFT mean", "ttft_mean_seconds"),
    ("TTFT P99", "ttft_p99_seconds"),
    ("TPOT mean", "tpot_mean_seconds"),
    ("TPOT P99", "tpot_p99_seconds"),
    ("E2E mean", "e2e_mean_seconds"),
    ("output tok/s", "output_tps"),
)


@dataclass(frozen=True)
class PlanUnderTest:
    name: str
    plan: Plan
    file: Path
    spec: InferenceServiceSpec
    """As planned: a config.json from ``hfConfigFile`` or the Hub already inlined."""


def load_plan(file: Path) -> PlanUnderTest:
    """The one InferenceService in ``file`` and its plan (exit 2 on bad input)."""
    try:
        services = validate_manifests(read_input(file), model_source_for(file))
    except SpecError as err:
        raise bad_input(f"--plan {file}: {err}") from err
    if len(services) != 1:
        raise bad_input(f"--plan {file}: expected one InferenceService, found {len(services)}")
    s = services[0]
    try:
        plan = plan_service(s.spec, s.metadata.name)
    except SpecError as err:
        raise bad_input(f"--plan {file}: {err}") from err
    if plan.replicas is None:
        raise bad_input(
            f"--plan {file}: the plan cannot serve: " + "; ".join(plan.infeasible_reasons)
        )
    return PlanUnderTest(s.metadata.name, plan, file, s.spec)


def predictions(put: PlanUnderTest, profile: BenchProfile) -> list[tuple[int, CurveStep]]:
    """(concurrency, prediction) for every ramp step with finished requests."""
    r = resolve(put.spec, put.name)
    out = []
    for step in profile.ramp():
        if step.concurrency is None or step.requests == 0:
            continue
        out.append(
            (
                step.concurrency,
                predicted_step(
                    r, put.plan, step.concurrency, step.input_tokens_mean, step.output_tokens_mean
                ),
            )
        )
    return out


def comparison_rows(
    profile: BenchProfile, predicted: list[tuple[int, CurveStep]]
) -> list[dict[str, float | int | None]]:
    """Measured, predicted and ``predicted / measured − 1`` per compared metric and step."""
    by_c = {s.concurrency: s for s in profile.ramp()}
    rows: list[dict[str, float | int | None]] = []
    for c, p in predicted:
        step = by_c[c]
        row: dict[str, float | int | None] = {"concurrency": c}
        for _, key in COMPARED:
            measured = getattr(step, key, None)
            estimate = float(getattr(p, key))
            row[f"{key}_measured"] = measured
            row[f"{key}_predicted"] = estimate
            row[f"{key}_error"] = (
                estimate / measured - 1.0 if measured is not None and measured > 0 else None
            )
        rows.append(row)
    return rows


def comparison_table(put: PlanUnderTest, rows: list[dict[str, float | int | None]]) -> Table:
    t = Table(
        title=f"measured vs predicted ({put.name}: TP {put.plan.tensor_parallel_size}, chunk "
        f"{put.plan.max_num_batched_tokens:,}); error = predicted / measured − 1"
    )
    t.add_column("conc.", justify="right")
    for label, _ in COMPARED:
        t.add_column(label, justify="right", overflow="fold")
    for row in rows:
        cells = [str(row["concurrency"])]
        for label, key in COMPARED:
            m, p, e = row[f"{key}_measured"], row[f"{key}_predicted"], row[f"{key}_error"]
            scale, unit = (1.0, "") if label == "output tok/s" else (1e3, " ms")
            if label.startswith("E2E"):
                scale, unit = 1.0, " s"
            fmt = ",.0f" if scale != 1.0 or label == "output tok/s" else ",.2f"
            measured = "–" if m is None else f"{float(m) * scale:{fmt}}"
            cells.append(
                f"{measured} / {float(p or 0) * scale:{fmt}}{unit}"
                + ("" if e is None else f" ({float(e):+.0%})")
            )
        t.add_row(*cells)
    return t
