"""The simulator's disaggregated fleets: prefill engines, the KV transfer, decode engines; and
the planner's ``auto`` choice held to the simulator's cheaper architecture."""

import json
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import manifest
from tests.helpers import spec as make_spec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.cli.app import app
from tokenscale.planning import plan_service
from tokenscale.simulation.disaggregated import (
    compare,
    engines,
    replay_aggregated,
    replay_disaggregated,
)
from tokenscale.simulation.trace import Trace, TraceRequest
from tokenscale.simulation.workloads import LONG_PROMPT, SHORT_PROMPT, TokenMix, steady


def _spec(mix: TokenMix, tpot_s: float, **patch: Any) -> InferenceServiceSpec:
    base: dict[str, Any] = {
        "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": "auto"},
        "workload": {
            "rps": {"mean": 20},
            "inputTokens": {"mean": mix.input_mean, "p99": mix.input_p99},
            "outputTokens": {"mean": mix.output_mean, "p99": mix.output_p99},
            "maxContextTokens": None,
        },
        "slo": {"ttftP99Seconds": 3.0, "tpotP99Seconds": tpot_s},
        "serving": {"disaggregation": "auto"},
    }
    base.update(patch)
    return make_spec(**base)


LONG = _spec(LONG_PROMPT, 0.02)
SHORT = _spec(SHORT_PROMPT, 0.03)


#: With the H100's fitted decode factor (planning/decode_gpu.py) the long-prompt shape is a tie
#: in the simulator (aggregated 4 x TP 2 = 8 GPUs against 4P+4D = 8) where the planner sizes the
#: aggregated fleet at 12 GPUs (knee-limited, docs/disaggregation.md) and the prefill pool at 5
#: (20 RPS × 0.162 s of service = 3.24 busy engines, over 4 at the 0.8 utilization cap; the
#: simulated 4 run at 0.81 within the TTFT SLO): the planner-vs-simulator gap of issue 34's timing
#: work, recorded here until that work closes it.
LONG_TIE = pytest.mark.xfail(
    strict=True,
    reason="simulator: 8 vs 8 GPUs (one pool); planner: 12 vs 9 (two pools): issue 34 item 4",
)


@pytest.mark.parametrize(
    ("spec", "mix", "disaggregates"),
    [
        pytest.param(LONG, LONG_PROMPT, True, id="long-prompt", marks=LONG_TIE),
        pytest.param(SHORT, SHORT_PROMPT, False, id="short-prompt"),
    ],
)
def test_auto_agrees_with_the_simulators_cheaper_architecture(
    spec: InferenceServiceSpec, mix: TokenMix, disaggregates: bool
) -> None:
    """Long prompts stall a shared pool's decode steps beyond a 20 ms TPOT SLO: two pools meet
    it on fewer GPUs, in the simulator as in the plan. Short chats: one pool."""
    found = compare(spec, steady(60.0, 20.0, mix, seed=1))
    assert found.aggregated is not None
    assert found.disaggregated is not None
    assert found.aggregated.meets_slo
    assert found.disaggregated.meets_slo
    assert found.simulator_disaggregates is disaggregates
    assert found.planner_disaggregates is disaggregates
    assert found.agree


def _one(n_in: int, n_out: int) -> Trace:
    return Trace((TraceRequest(0.0, n_in, n_out),), "one")


def test_one_request_pays_prefill_transfer_and_first_step() -> None:
    """Alone in the fleet, a request's TTFT is its prefill, the KV transfer and one decode step;
    a slower fabric adds exactly the transfer's difference."""
    plan = plan_service(LONG)
    e = engines(LONG, plan)
    fast = replay_disaggregated(e.prefill, e.decode, 1, 1, e.transfer_s, _one(8000, 50))
    slow = replay_disaggregated(
        e.prefill, e.decode, 1, 1, lambda n: e.transfer_s(n) + 0.25, _one(8000, 50)
    )
    (a,), (b,) = fast.outcomes, slow.outcomes
    assert a.output_tokens == 50
    assert b.ttft_s - a.ttft_s == pytest.approx(0.25, abs=1e-9)
    assert a.tpot_s == pytest.approx(b.tpot_s)
    prefill_alone = replay_aggregated(e.prefill, 1, _one(8000, 1)).outcomes[0].ttft_s
    assert a.ttft_s > prefill_alone + e.transfer_s(8000)


def test_transfer_grows_with_the_prompt() -> None:
    e = engines(LONG, plan_service(LONG))
    sizes = [0, 1, 100, 1000, 8000, 16000, 32000]
    times = [e.transfer_s(n) for n in sizes]
    assert times == sorted(times)
    assert times[0] == 0.0


def test_every_request_is_served_once_with_its_answer() -> None:
    trace = steady(20.0, 20.0, LONG_PROMPT, seed=3)
    e = engines(LONG, plan_service(LONG))
    rec = replay_disaggregated(e.prefill, e.decode, 2, 2, e.transfer_s, trace)
    assert sorted(o.arrival_s for o in rec.outcomes) == [r.arrival_s for r in trace.requests]
    assert sum(o.output_tokens for o in rec.outcomes) == sum(
        r.output_tokens for r in trace.requests
    )


def test_decode_pool_tpot_is_not_stalled_by_long_prompts() -> None:
    """The same traffic: the disaggregated decode engines' TPOT P99 stays under the shared
    pool's at the same number of decoding engines, and near a pure decode step."""
    trace = steady(40.0, 20.0, LONG_PROMPT, seed=4)
    e = engines(LONG, plan_service(LONG))
    shared = replay_aggregated(e.aggregated, 4, trace)
    split = replay_disaggregated(e.prefill, e.decode, 4, 4, e.transfer_s, trace)

    def p99(rec: Any) -> float:
        values = sorted(o.tpot_s for o in rec.outcomes if o.output_tokens > 1)
        return float(values[int(0.99 * (len(values) - 1))])

    assert p99(split) < p99(shared)
    assert p99(split) < LONG.slo.tpot_p99_seconds  # type: ignore[operator]


def test_engines_need_pools() -> None:
    off = make_spec()
    with pytest.raises(ValueError, match="disaggregation"):
        engines(off, plan_service(off))


def test_cli_architectures(tmp_path: Any) -> None:
    trace = steady(30.0, 5.0, SHORT_PROMPT, seed=2)
    csv = tmp_path / "t.csv"
    csv.write_text(
        "arrival,input,output\n"
        + "".join(f"{r.arrival_s:.4f},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests)
    )
    svc = tmp_path / "s.yaml"
    svc.write_text(yaml.safe_dump(manifest(workload={"rps": {"mean": 5}})))
    args = [
        "simulate",
        str(svc),
        "--trace",
        str(csv),
        "--format",
        "csv",
        "--columns",
        "arrival=arrival,input=input,output=output",
        "--architectures",
    ]
    result = CliRunner().invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["aggregated"]["meets_slo"]
    assert data["agree"] is True
    scaled = data["scaled_disaggregated"]  # the two pools, scaled by the per-role policy
    assert scaled["served"] == scaled["requests"] == len(trace.requests)
    assert scaled["decisions"] >= 1
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "scaled per role" in table.output


def test_role_engines_have_their_pools_kv() -> None:
    plan = plan_service(LONG)
    d = plan.disaggregation
    assert d is not None
    assert d.prefill is not None
    assert d.decode is not None
    e = engines(LONG, plan)
    block = LONG.serving.block_size
    assert e.decode.kv_blocks * block == d.decode.kv_capacity_tokens_per_replica
    assert e.prefill.kv_blocks * block == d.prefill.kv_capacity_tokens_per_replica
    assert e.prefill.max_num_batched_tokens == d.prefill.max_num_batched_tokens
