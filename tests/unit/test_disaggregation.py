"""Prefill/decode disaggregation in the planner: the pools, the KV transfer, the choice."""

import json
import math
import os
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from tests.helpers import manifest
from tests.helpers import spec as make_spec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.cli.app import app
from tokenscale.cli.sweep_formats import sweep_table
from tokenscale.planning import Conditions, plan_service, resolve, sweep
from tokenscale.planning.disaggregation import (
    Fabric,
    decode_tpot_p99_seconds,
    fabric_between,
    prefill_ttft_seconds,
    transfer_seconds,
)
from tokenscale.planning.load import Z_P99
from tokenscale.planning.planner import perf_at

EXAMPLES = int(os.environ.get("TOKENSCALE_HYPOTHESIS_EXAMPLES", "40"))


def _shape(prompt: int, answer: int, rps: float = 20.0, **patch: Any) -> InferenceServiceSpec:
    """Llama-3.1-8B on H100, ``prompt``/``answer`` tokens (P99 twice the mean), auto TP."""
    base: dict[str, Any] = {
        "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": "auto"},
        "workload": {
            "rps": {"mean": rps},
            "inputTokens": {"mean": prompt, "p99": 2 * prompt},
            "outputTokens": {"mean": answer, "p99": 2 * answer},
            "maxContextTokens": None,
        },
        "slo": {"ttftP99Seconds": 3.0, "tpotP99Seconds": 0.03},
        "serving": {"disaggregation": "auto"},
    }
    base.update(patch)
    return make_spec(**base)


LONG = _shape(8000, 200)
SHORT = _shape(300, 300)


def test_off_is_the_default_and_plans_nothing_more() -> None:
    spec = make_spec()
    assert spec.serving.disaggregation == "off"
    assert plan_service(spec).disaggregation is None


def test_long_prompts_disaggregate_short_ones_do_not() -> None:
    """The two shapes the workload suite carries: 8k-token prompts with short answers stall a
    shared pool's decode steps, so two pools need fewer GPUs; 300-token chats fit one GPU."""
    long_plan, short_plan = plan_service(LONG), plan_service(SHORT)
    d_long, d_short = long_plan.disaggregation, short_plan.disaggregation
    assert d_long is not None
    assert d_short is not None
    assert d_long.enabled
    assert d_long.gpus_needed is not None
    assert d_long.aggregated_gpus_needed is not None
    assert d_long.gpus_needed < d_long.aggregated_gpus_needed
    assert long_plan.gpus_total == d_long.gpus_total
    assert d_long.reason.startswith("disaggregated: fewer GPUs")
    assert f"{d_long.gpus_needed} GPUs vs {d_long.aggregated_gpus_needed} aggregated" in (
        d_long.reason
    )
    assert not d_short.enabled
    assert d_short.reason.startswith("aggregated")
    assert short_plan.gpus_total == (short_plan.replicas.total if short_plan.replicas else 0) * (
        short_plan.gpus_per_replica
    )


@settings(max_examples=max(EXAMPLES // 4, 5), deadline=None)
@given(
    prompt=st.integers(min_value=200, max_value=12_000),
    answer=st.integers(min_value=20, max_value=800),
)
def test_auto_picks_the_architecture_needing_fewer_gpus(prompt: int, answer: int) -> None:
    plan = plan_service(_shape(prompt, answer, rps=8.0))
    d = plan.disaggregation
    assert d is not None
    assert d.prefill is not None
    assert d.decode is not None
    assert d.gpus_needed == d.prefill.gpus_needed + d.decode.gpus_needed
    cheaper = d.feasible and (
        d.aggregated_gpus_needed is None
        or (d.gpus_needed is not None and d.gpus_needed < d.aggregated_gpus_needed)
    )
    assert d.enabled == cheaper
    if d.enabled:
        assert plan.gpus_total == d.gpus_total
        assert plan.cost_per_hour == d.cost_per_hour


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prompt=st.integers(min_value=100, max_value=30_000),
    chunk=st.sampled_from([512, 1024, 2048, 8192]),
    batch=st.integers(min_value=1, max_value=256),
)
def test_disaggregated_tpot_never_includes_prefill_stalls(
    prompt: int, chunk: int, batch: int
) -> None:
    """The decode pool's TPOT P99 is decode steps at the batch's P99 and nothing else: the chunk
    budget (what a shared pool's stalls scale with) does not move it, and it never exceeds the
    shared pool's TPOT P99 at the same batch."""
    spec = _shape(prompt, 100, serving={"maxNumBatchedTokens": chunk})
    r = resolve(spec)
    c = Conditions(workload=spec.workload)
    perf = perf_at(r, c, 1, chunk)
    other = perf_at(r, c, 1, 4 * chunk)
    tpot = decode_tpot_p99_seconds(perf, batch)
    assert tpot == pytest.approx(perf.step_seconds(batch + Z_P99 * math.sqrt(batch)))
    assert tpot == pytest.approx(decode_tpot_p99_seconds(other, batch))
    assert tpot <= perf.tpot_quantile_seconds(batch, Z_P99) + 1e-12


@given(
    a=st.floats(min_value=0, max_value=200_000),
    b=st.floats(min_value=0, max_value=200_000),
    lanes=st.integers(min_value=1, max_value=8),
)
def test_transfer_time_is_monotone_in_prompt_length(a: float, b: float, lanes: int) -> None:
    nvlink = fabric_between(True, 900e9, 50.0, 0.7, 0.8, 2.5e-5)
    fabric = fabric_between(False, 900e9, 50.0, 0.7, 0.8, 2.5e-5)
    lo, hi = sorted((a, b))
    for f in (nvlink, fabric):
        assert transfer_seconds(131_072, lo, f, lanes) <= transfer_seconds(131_072, hi, f, lanes)
    assert transfer_seconds(131_072, hi, nvlink, lanes) <= transfer_seconds(
        131_072, hi, fabric, lanes
    )


def test_transfer_arithmetic() -> None:
    """8,000 tokens × 128 KiB (Llama-3.1-8B BF16: 32 layers × 8 KV heads × 128 × 2 × 2 B) over
    one 50 GB/s link at 80 %: 1.049 GB / 40 GB/s = 26.2 ms, plus the latency."""
    f = Fabric(bytes_per_s=50e9 * 0.8, latency_s=2.5e-5, note="")
    assert transfer_seconds(131_072, 8000, f, 1) == pytest.approx(2.5e-5 + 131_072 * 8000 / 40e9)
    assert transfer_seconds(131_072, 8000, f, 2) < transfer_seconds(131_072, 8000, f, 1)
    assert transfer_seconds(131_072, 0, f, 1) == 0.0


def test_ttft_is_queue_prefill_transfer_and_first_step() -> None:
    spec = LONG
    r = resolve(spec)
    perf = perf_at(r, Conditions(workload=spec.workload), 1, 8192)
    idle = prefill_ttft_seconds(perf, 0.0, 16_000, 0.05, 0.01)
    assert idle == pytest.approx(
        perf.prefill_seconds(16_000) + 0.05 + 0.01 + perf.request_overhead_seconds(16_000)
    )
    a = perf.assumptions
    assert perf.request_overhead_seconds(16_000) == pytest.approx(
        a.request_overhead_seconds + 16_000 * a.request_overhead_per_token_seconds
    )
    # the queue is one pool's (M/G/1, Pollaczek–Khinchine) with no decode in its steps:
    # ρ/(1−ρ) = 1 at ρ = 0.5, times the service's (1 + C²)/2
    busy = prefill_ttft_seconds(perf, 0.5, 16_000, 0.05, 0.01)
    service, scv = perf.prefill_service_seconds(0.0), perf.prefill_service_scv(0.0)
    assert scv is not None
    assert busy == pytest.approx(idle + service * (1.0 + scv) / 2.0)


def test_the_plan_meets_the_slos_it_was_sized_for() -> None:
    d = plan_service(LONG).disaggregation
    assert d is not None
    assert d.ttft_p99_estimate_s is not None
    assert d.tpot_p99_estimate_s is not None
    assert d.kv_transfer_s is not None
    assert d.ttft_p99_estimate_s <= 3.0
    assert d.tpot_p99_estimate_s <= 0.03
    assert d.ttft_p99_estimate_s > d.kv_transfer_s


def test_redundancy_applies_to_each_pool() -> None:
    plain = plan_service(_shape(8000, 200, serving={"disaggregation": "on"}))
    spared = plan_service(
        _shape(
            8000,
            200,
            serving={"disaggregation": "on"},
            scaling={"redundancy": {"factor": 1.0, "spareReplicas": 1}},
        )
    )
    a, b = plain.disaggregation, spared.disaggregation
    assert a is not None
    assert b is not None
    assert a.prefill is not None
    assert a.decode is not None
    assert b.prefill is not None
    assert b.decode is not None
    assert b.prefill.replicas_with_redundancy == a.prefill.replicas_with_redundancy + 1
    assert b.decode.replicas_with_redundancy == a.decode.replicas_with_redundancy + 1


def test_on_runs_disaggregated_even_when_it_needs_more() -> None:
    plan = plan_service(_shape(300, 300, serving={"disaggregation": "on"}))
    d = plan.disaggregation
    assert d is not None
    assert d.enabled
    assert plan.gpus_total == d.gpus_total
    assert d.reason.startswith("disaggregated (spec.serving.disaggregation: on)")


def test_json_carries_both_pools(tmp_path: Any) -> None:
    path = tmp_path / "svc.yaml"
    m = manifest(
        workload={
            "rps": {"mean": 20},
            "inputTokens": {"mean": 8000, "p99": 16000},
            "outputTokens": {"mean": 200, "p99": 400},
            "maxContextTokens": None,
        },
        slo={"ttftP99Seconds": 3.0, "tpotP99Seconds": 0.03},
        serving={"disaggregation": "auto"},
        hardware={"gpu": "H100-SXM-80GB", "tensorParallelSize": "auto"},
    )
    path.write_text(yaml.safe_dump(m))
    result = CliRunner().invoke(app, ["plan", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    d = data["disaggregation"]
    for key in ("enabled", "reason", "prefill", "decode", "kv_transfer_s", "ratio"):
        assert key in d
    for role in ("prefill", "decode"):
        for key in (
            "replicas",
            "tensor_parallel_size",
            "gpus_per_replica",
            "nodes_per_replica",
            "rps_per_replica",
        ):
            assert key in d[role]
    assert d["ratio"] == pytest.approx(d["prefill"]["replicas"] / d["decode"]["replicas"])
    assert data["gpus_total"] == d["gpus_total"]
    table = CliRunner().invoke(app, ["plan", str(path)], env={"COLUMNS": "200"})
    assert table.exit_code == 0
    assert "Prefill/decode disaggregation (auto: enabled)" in table.output


def test_bad_mode_names_the_field() -> None:
    with pytest.raises(ValueError, match="disaggregation"):
        make_spec(serving={"disaggregation": "maybe"})


def test_sweep_rows_carry_the_choice() -> None:
    """``--sweep`` plans every row with the spec's mode: a disaggregated row's GPUs and unit
    costs are the pools', and the table names the pools."""
    rows = sweep(LONG, gpus=["H100-SXM-80GB"], tp_sizes=[1, 2], dtypes=["bf16"])
    split = [r for r in rows if r.plan is not None and r.plan.disaggregation is not None]
    assert len(split) == 2
    enabled = [
        r.plan
        for r in split
        if r.plan is not None
        and r.plan.disaggregation is not None
        and r.plan.disaggregation.enabled
    ]
    assert enabled
    for plan in enabled:
        d = plan.disaggregation
        assert d is not None
        assert plan.gpus_total == d.gpus_total
    console = Console(width=220, record=True)
    console.print(sweep_table(rows, 10, None, 220))
    assert " P/D" in console.export_text()
