"""Speculative decoding: the expected-tokens formula, the gain shrinking as the batch becomes
compute-bound, the draft in the memory budget, ``auto``, and the rendered
``--speculative-config``."""

import itertools
import json
from typing import Any

import pytest
import yaml
from benchmarks.accuracy_speculative import acceptance_from_tau
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.helpers import manifest, spec
from tests.unit.test_status_transitions import SNAP, FakeKube, _body, _metrics
from tokenscale.api import InferenceService
from tokenscale.api.errors import SpecError
from tokenscale.cli.app import app
from tokenscale.planning import plan_service
from tokenscale.planning.conditions import forecast_conditions
from tokenscale.planning.planner import layout_of, perf_at
from tokenscale.planning.resolve import resolve
from tokenscale.planning.speculative import (
    HEAD_FORWARD_OVERHEAD_SECONDS,
    tokens_per_step,
    with_measured_acceptance,
)
from tokenscale.render.engine_args import engine_args

runner = CliRunner()
#: The keys of vLLM's ``SpeculativeConfig`` the operator renders (vllm/config/speculative.py,
#: vllm-project/vllm, Apache-2.0): the rendered JSON may use no other.
VLLM_SPECULATIVE_KEYS = {
    "method",
    "num_speculative_tokens",
    "model",
    "prompt_lookup_max",
    "prompt_lookup_min",
    "draft_tensor_parallel_size",
}
EAGLE = {"name": "org/eagle3-llama-3.1-70b"}
DRAFT = {"name": "meta-llama/Llama-3.2-1B-Instruct", "catalog": "llama-3.2-1b"}
#: A decode-dominated service on 70B: long answers, modest traffic.
LONG: dict[str, Any] = {
    "model": {"name": "meta-llama/Llama-3.1-70B-Instruct", "catalog": "llama-3.1-70b"},
    "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 4},
    "workload": {
        "rps": {"mean": 2},
        "inputTokens": {"mean": 500, "p99": 2000},
        "outputTokens": {"mean": 800, "p99": 2000},
        "maxContextTokens": 8192,
    },
    "slo": {"ttftP99Seconds": 3.0, "tpotP99Seconds": 0.1},
}


def _spec(speculative: dict[str, Any] | None, **extra: Any) -> Any:
    serving = {"speculative": speculative} if speculative is not None else {}
    return spec(**LONG, serving=serving, **extra)


def test_tokens_per_step_is_the_papers_formula() -> None:
    # (1 − 0.7^5) / (1 − 0.7) = 2.7731
    assert tokens_per_step(0.7, 4) == pytest.approx((1 - 0.7**5) / 0.3)
    assert tokens_per_step(0.7, 4) == pytest.approx(2.7731, abs=1e-4)
    assert tokens_per_step(0.0, 4) == 1.0
    assert tokens_per_step(0.99, 3) == pytest.approx(3.9404, abs=1e-4)


@given(st.floats(0.0, 0.99), st.integers(1, 16), st.floats(0.0, 0.99))
def test_tokens_per_step_is_bounded_and_grows_with_acceptance(a: float, k: int, b: float) -> None:
    tau = tokens_per_step(a, k)
    assert 1.0 - 1e-12 <= tau <= k + 1 + 1e-12
    lo, hi = sorted((a, b))
    assert tokens_per_step(lo, k) <= tokens_per_step(hi, k) + 1e-12
    assert tokens_per_step(a, k) <= tokens_per_step(a, k + 1) + 1e-12


def test_the_gain_shrinks_as_the_batch_grows() -> None:
    s = _spec({"method": "draft_model", "acceptanceRate": 0.7, "draftModel": DRAFT})
    plan = plan_service(s, "svc")
    r = resolve(s, "svc")
    c = forecast_conditions(r)
    on = perf_at(r, c, layout_of(plan), plan.max_num_batched_tokens)
    off_r = resolve(spec(**LONG), "svc")
    off = perf_at(off_r, forecast_conditions(off_r), layout_of(plan), plan.max_num_batched_tokens)
    ratios = [on.output_tps(b) / off.output_tps(b) for b in (1, 2, 4, 8, 16, 32, 64, 128, 256)]
    assert ratios[0] > 1.8  # bandwidth-bound: nearly τ / (1 + draft cost)
    assert ratios[-1] < 1.0  # compute-bound: verifying k + 1 tokens costs in full
    assert all(x >= y - 1e-9 for x, y in itertools.pairwise(ratios)), ratios
    est = plan.speculative
    assert est is not None
    assert 1 <= est.break_even_batch < 256
    assert on.output_tps(est.break_even_batch) >= off.output_tps(est.break_even_batch)
    assert on.output_tps(est.break_even_batch + 1) < off.output_tps(est.break_even_batch + 1)


def test_the_draft_takes_weights_and_kv_from_the_budget() -> None:
    off = plan_service(_spec(None), "svc")
    ngram = plan_service(_spec({"method": "ngram", "acceptanceRate": 0.5}), "svc")
    draft = plan_service(
        _spec({"method": "draft_model", "acceptanceRate": 0.7, "draftModel": DRAFT}), "svc"
    )
    assert ngram.memory_per_gpu.weights_bytes == off.memory_per_gpu.weights_bytes
    assert ngram.kv_capacity_tokens_per_replica == off.kv_capacity_tokens_per_replica
    assert draft.speculative is not None
    added = draft.memory_per_gpu.weights_bytes - off.memory_per_gpu.weights_bytes
    # Llama-3.2-1B: 1.24 B params × 2 bytes over TP 4
    assert added == pytest.approx(draft.speculative.draft_weight_bytes_per_gpu)
    assert added == pytest.approx(1.24e9 * 2 / 4, rel=0.02)
    # the pool loses the weights, and each token also holds the draft's KV
    per_token = off.kv_bytes_per_token_per_gpu + draft.speculative.draft_kv_bytes_per_token_per_gpu
    expected = (off.memory_per_gpu.kv_pool_bytes - added) / per_token
    assert draft.kv_capacity_tokens_per_replica == pytest.approx(expected, rel=0.01)


def test_auto_turns_it_on_only_where_it_pays() -> None:
    good = plan_service(
        _spec({"method": "auto", "acceptanceRate": 0.8, "draftModel": DRAFT}), "svc"
    )
    assert good.speculative is not None
    assert good.speculative.enabled is True
    assert good.speculative.method == "draft_model"
    assert good.speculative.tpot_s < good.speculative.tpot_without_s
    assert "on (auto: it pays)" in good.speculative.reason
    poor = plan_service(_spec({"method": "auto", "acceptanceRate": 0.05}), "svc")
    assert poor.speculative is not None
    assert poor.speculative.method == "ngram"
    assert poor.speculative.enabled is False
    assert poor.speculative.reason.startswith("off (auto:")
    assert "--speculative-config" not in engine_args(
        _spec({"method": "auto", "acceptanceRate": 0.05}), poor
    )
    # a named method stays on and says what it costs
    named = plan_service(_spec({"method": "ngram", "acceptanceRate": 0.05}), "svc")
    assert named.speculative is not None
    assert named.speculative.enabled is True
    assert named.speculative.throughput_ratio < 1.0


def test_busy_replicas_gain_less_than_idle_ones() -> None:
    """The same proposer on the same model: at a batch deep in the compute-bound range the
    TPOT gain is smaller than at a light load."""
    spec_ = {"method": "draft_model", "acceptanceRate": 0.7, "draftModel": DRAFT}
    light = plan_service(_spec(spec_), "svc").speculative
    heavy = plan_service(
        _spec(spec_, scaling={"maxReplicas": 64}).model_copy(
            update={
                "workload": _spec(spec_).workload.model_copy(
                    update={"rps": _spec(spec_).workload.rps.model_copy(update={"mean": 40.0})}
                )
            }
        ),
        "svc",
    ).speculative
    assert light is not None
    assert heavy is not None
    gain = lambda e: e.tpot_without_s / e.tpot_s  # noqa: E731
    assert heavy.load_batch > light.load_batch
    assert gain(heavy) < gain(light)


@pytest.mark.parametrize(
    ("speculative", "expected"),
    [
        (
            {"method": "draft_model", "acceptanceRate": 0.7, "draftModel": DRAFT},
            {"method": "draft_model", "model": DRAFT["name"], "num_speculative_tokens": 3},
        ),
        (
            {"method": "ngram", "acceptanceRate": 0.5, "numSpeculativeTokens": 5},
            {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 5},
        ),
        (
            {
                "method": "eagle3",
                "acceptanceRate": 0.8,
                "draftModel": EAGLE,
            },
            {"method": "eagle3", "model": "org/eagle3-llama-3.1-70b", "num_speculative_tokens": 3},
        ),
        ({"method": "mtp", "acceptanceRate": 0.8}, {"method": "mtp", "num_speculative_tokens": 3}),
    ],
)
def test_the_rendered_speculative_config(
    speculative: dict[str, Any], expected: dict[str, Any]
) -> None:
    s = _spec(speculative)
    args = engine_args(s, plan_service(s, "svc"))
    config = json.loads(args[args.index("--speculative-config") + 1])
    assert config == expected
    assert set(config) <= VLLM_SPECULATIVE_KEYS


@pytest.mark.parametrize(
    ("speculative", "words"),
    [
        ({"method": "eagle", "acceptanceRate": 0.7}, "needs draftModel"),
        ({"method": "ngram", "acceptanceRate": 0.7, "draftModel": DRAFT}, "takes no draftModel"),
        ({"method": "ngram", "acceptanceRate": 1.5}, "acceptanceRate"),
        ({"method": "medusa", "acceptanceRate": 0.5}, "method"),
        (
            {"method": "ngram", "acceptanceRate": 0.5, "numSpeculativeTokens": 0},
            "numSpeculativeTokens",
        ),
    ],
)
def test_bad_speculative_input_exits_2_naming_the_field(
    tmp_path: Any, speculative: dict[str, Any], words: str
) -> None:
    f = tmp_path / "svc.yaml"
    f.write_text(yaml.safe_dump(manifest(**LONG, serving={"speculative": speculative})))
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2, result.output
    assert "spec.serving.speculative" in result.output
    assert words in result.output


def test_an_unknown_draft_names_its_field() -> None:
    bad = {"method": "draft_model", "acceptanceRate": 0.7, "draftModel": {"name": "nope/x"}}
    with pytest.raises(SpecError) as err:
        plan_service(_spec(bad), "svc")
    assert err.value.paths == ("spec.serving.speculative.draftModel.name",)


def test_extra_args_cannot_override_the_speculative_config() -> None:
    with pytest.raises(Exception, match=r"spec\.serving\.speculative"):
        spec(serving={"extraArgs": ["--speculative-config={}"]})


def test_a_measured_acceptance_replaces_the_assumed_one_for_a_named_method() -> None:
    named = _spec({"method": "ngram", "acceptanceRate": 0.7})
    assert with_measured_acceptance(named, None) is named
    calibrated = with_measured_acceptance(named, 0.42)
    assert calibrated.serving.speculative is not None
    assert calibrated.serving.speculative.acceptance_rate == 0.42
    assert with_measured_acceptance(named, 1.0).serving.speculative.acceptance_rate == 0.99  # type: ignore[union-attr]
    auto = _spec({"method": "auto", "acceptanceRate": 0.7})
    assert with_measured_acceptance(auto, 0.42) is auto


def test_status_shows_the_measured_rate_and_the_plan_made_with_it() -> None:
    body = _body(**LONG, serving={"speculative": {"method": "ngram", "acceptanceRate": 0.7}})
    kube = FakeKube(body)
    kube.run(None)
    assert "α=0.70" in kube.body["status"]["plan"]["speculative"]
    kube.run(_metrics(SNAP.model_copy(update={"spec_decode_acceptance_rate": 0.42})))
    status = kube.body["status"]
    assert status["live"]["specDecodeAcceptanceRate"] == 0.42
    assert "α=0.42" in status["plan"]["speculative"]
    assert kube.body["spec"]["serving"]["speculative"]["acceptanceRate"] == 0.7  # spec untouched


def test_the_engine_calibrates_against_the_speculation_the_fleet_runs() -> None:
    """``auto`` turned speculation on: engines decoding at the speculative TPOT are as fast as
    modelled (calibration ≈ 1), not faster than a model without it would say."""
    from tokenscale.planning.planner import as_planned  # noqa: PLC0415
    from tokenscale.scaling.need import calibrate  # noqa: PLC0415
    from tokenscale.scaling.snapshot import Snapshot  # noqa: PLC0415

    s = _spec({"method": "auto", "acceptanceRate": 0.8, "draftModel": DRAFT})
    forecast = plan_service(s, "svc")
    assert forecast.speculative is not None
    assert forecast.speculative.enabled
    batch = 8.0
    planned = as_planned(resolve(s, "svc"), forecast)
    at = forecast_conditions(planned)
    tpot = perf_at(planned, at, layout_of(forecast)).tpot_open_seconds(batch)
    snap = Snapshot(at=0.0, replicas_reporting=1, running=batch, tpot_mean_s=tpot)
    assert calibrate(planned, forecast, snap, 1.0, 1e6) == pytest.approx(1.0, rel=0.05)
    # without the plan's speculation the same engines would read much faster than modelled
    unplanned = calibrate(resolve(s, "svc"), forecast, snap, 1.0, 1e6)
    assert unplanned > 1.2


def _perf_on(speculative: dict[str, Any]) -> Any:
    s = _spec(speculative)
    r = resolve(s, "svc")
    return perf_at(r, forecast_conditions(r), 4)


@pytest.mark.parametrize("method", ["eagle", "eagle3"])
def test_heads_pay_the_step_overhead_once_per_target_step(method: str) -> None:
    # vLLM runs a head's k forwards inside the target's step: one step overhead, then k
    # forwards that each cost their roofline plus the (smaller) per-forward overhead.
    costs = {
        k: _perf_on(
            {
                "method": method,
                "numSpeculativeTokens": k,
                "acceptanceRate": 0.7,
                "draftModel": EAGLE,
            }
        ).draft_seconds(1.0)
        for k in (2, 3, 4)
    }
    per_forward = costs[3] - costs[2]
    assert costs[4] - costs[3] == pytest.approx(per_forward)
    step = _perf_on({"method": method, "acceptanceRate": 0.7, "draftModel": EAGLE}).assumptions
    assert per_forward > HEAD_FORWARD_OVERHEAD_SECONDS
    assert per_forward < step.step_overhead_seconds
    assert costs[2] == pytest.approx(step.step_overhead_seconds + 2 * per_forward)


def test_a_draft_model_pays_the_step_overhead_on_every_forward() -> None:
    costs = {
        k: _perf_on(
            {
                "method": "draft_model",
                "numSpeculativeTokens": k,
                "acceptanceRate": 0.7,
                "draftModel": DRAFT,
            }
        )
        for k in (2, 3)
    }
    per_forward = costs[3].draft_seconds(1.0) - costs[2].draft_seconds(1.0)
    assert per_forward > costs[2].assumptions.step_overhead_seconds
    assert costs[2].draft_seconds(1.0) == pytest.approx(2 * per_forward)


@given(st.floats(0.0, 0.99), st.integers(1, 16))
def test_a_stated_mean_accepted_length_converts_back_to_its_acceptance_rate(
    a: float, k: int
) -> None:
    tau = tokens_per_step(a, k)
    assert tokens_per_step(acceptance_from_tau(tau, k), k) == pytest.approx(tau, abs=1e-6)


@pytest.mark.parametrize("method", ["draft_model", "auto"])
def test_a_draft_larger_than_its_target_is_refused_naming_the_field(
    tmp_path: Any, method: str
) -> None:
    """An 8B target with a 70B draft at TP 8 planned TP 8 × PP 2 on 2 nodes for the draft's
    weights, then turned speculation off as "not modelled": a draft that is not smaller than
    its target can never pay, so the spec is refused (exit 2), the field named."""
    draft = {"name": "meta-llama/Llama-3.1-70B-Instruct", "catalog": "llama-3.1-70b"}
    big = {"method": method, "acceptanceRate": 0.7, "draftModel": draft}
    doc = manifest(hardware={"gpu": "H100-SXM-80GB", "tensorParallelSize": 8})
    doc["spec"]["serving"] = {"speculative": big}
    with pytest.raises(SpecError) as err:
        plan_service(InferenceService.model_validate(doc).spec, "svc")
    assert err.value.paths == ("spec.serving.speculative.draftModel",)
    f = tmp_path / "svc.yaml"
    f.write_text(yaml.safe_dump(doc))
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2, result.output
    assert "spec.serving.speculative.draftModel" in result.output
    assert "not smaller than the target" in result.output
    # the same target with a draft smaller than it plans (and says whether it pays)
    doc["spec"]["serving"]["speculative"]["draftModel"] = DRAFT
    plan = plan_service(InferenceService.model_validate(doc).spec, "svc")
    assert plan.replicas is not None
    assert plan.nodes_per_replica == 1
