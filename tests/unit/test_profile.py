"""Bench profiles feed the planner and the engine: measured numbers replace the roofline's."""

import math
from typing import Any

import pytest

from tests.helpers import PROFILE, bench_step, manifest
from tests.helpers import spec as make_spec
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_inference_service
from tokenscale.api.profile import BenchProfile, parse_profile
from tokenscale.bench.analysis import RequestRecord, find_knee, operating_concurrency, summarize
from tokenscale.planning import plan_service, resolve
from tokenscale.scaling.engine import profile_calibration


def _with(profile: dict[str, Any] | None = PROFILE, **spec: Any) -> Any:
    return make_spec(profile=profile, **spec)


def test_the_planner_sizes_from_the_measured_operating_point() -> None:
    plan = plan_service(_with())
    assert plan.operating_batch == 32  # the largest step meeting TTFT 2 s / TPOT 50 ms
    assert plan.rps_per_replica == 5.0
    assert plan.max_concurrency_per_replica == 32
    assert plan.replicas.throughput == pytest.approx(10 / 5.0)
    assert plan.replicas.concurrency == pytest.approx(10 / 5.0)  # λ × (32 / 5) / 32
    assert plan.ttft_p99_estimate_s == 0.5
    checks = {c.name: c for c in plan.slo_checks}
    assert checks["tpot_p99"].estimate_s == 0.045
    assert "measured" in plan.sources["rps_per_replica"]
    assert "concurrency 32" in plan.sources["rps_per_replica"]
    modelled = plan_service(_with(None))
    assert modelled.sources == {}
    assert modelled.rps_per_replica != plan.rps_per_replica


def test_a_profile_applies_only_where_it_was_measured() -> None:
    other_tp = plan_service(_with({**PROFILE, "tensorParallelSize": 2}))
    assert other_tp.sources == {}
    other_gpu = plan_service(_with({**PROFILE, "gpu": "A100-SXM-80GB"}))
    assert other_gpu.sources == {}
    assert any("measured on A100-SXM-80GB" in w for w in other_gpu.warnings)


def test_no_measured_step_meeting_the_slo_falls_back_to_the_model() -> None:
    strict = plan_service(_with(slo={"ttftP99Seconds": 0.1, "tpotP99Seconds": 0.01}))
    assert strict.sources == {}
    assert any("no measured concurrency met the SLOs" in w for w in strict.warnings)


def test_a_workload_unlike_the_measurement_is_warned_about() -> None:
    long = plan_service(_with(workload={"inputTokens": {"mean": 4000, "p99": 8000}}))
    assert any("measured at 1,000 input tokens (workload 4,000)" in w for w in long.warnings)


def test_profile_and_profile_ref_together_is_an_error_naming_both() -> None:
    with pytest.raises(SpecError, match=r"^spec: .*set spec\.profile or spec\.profileRef"):
        parse_inference_service(manifest(profile=PROFILE, profileRef={"configMapName": "p"}))


def test_parse_profile_names_where_and_the_field() -> None:
    assert (
        parse_profile(
            "model: m\nurl: u\ncomplete: true\nsteps: []\n"
            "kneeConcurrency: null\noperatingConcurrency: null\n",
            "cm",
        ).model
        == "m"
    )
    with pytest.raises(SpecError, match=r"cm.*steps"):
        parse_profile("model: m\nurl: u\ncomplete: true\n", "cm")
    with pytest.raises(SpecError, match="not YAML or JSON"):
        parse_profile("{", "cm")


def test_calibration_starts_from_the_measurement() -> None:
    s = _with()
    plan = plan_service(s)
    start = profile_calibration(resolve(s), plan)
    assert 0.5 <= start <= 1.5
    assert start != 1.0
    assert profile_calibration(resolve(_with(None)), plan_service(_with(None))) == 1.0


def test_profile_round_trips_camel_case() -> None:
    p = BenchProfile.model_validate(PROFILE)
    assert BenchProfile.model_validate(p.model_dump(mode="json", by_alias=True)) == p
    assert p.step_at(32) is not None


# -- the bench's own arithmetic ------------------------------------------------------------------
def _records(n: int, ttft: float, e2e: float, out: int) -> list[RequestRecord]:
    return [
        RequestRecord(input_tokens=100, output_tokens=out, ttft_s=ttft, e2e_s=e2e) for _ in range(n)
    ]


def test_summarize_uses_vllm_tpot_and_counts_failures() -> None:
    records = _records(10, 0.1, 2.1, 101)
    records.append(RequestRecord(input_tokens=100, error="HTTP 500"))
    records.append(RequestRecord(input_tokens=100, timed_out=True))
    step = summarize("ramp", records, duration_s := 4.0, concurrency=4)
    assert step.tpot_p50_seconds == pytest.approx((2.1 - 0.1) / 100)
    assert step.requests == 10
    assert step.errors == 1
    assert step.timeouts == 1
    assert step.output_tps == pytest.approx(10 * 101 / duration_s)
    assert step.requests_per_second == pytest.approx(10 / 4)


def test_knee_is_where_latency_outgrows_throughput() -> None:
    profile = BenchProfile.model_validate(PROFILE)
    ramp = profile.ramp()
    # 8→16: tps ×1.87, TTFT ×1.5 · 16→32: tps ×1.79, TTFT ×1.67 · 32→64: tps ×1.2, TTFT ×3
    assert find_knee(ramp) == 32
    assert operating_concurrency(ramp, 2.0, 0.05) == 32
    assert operating_concurrency(ramp, None, None) == 64
    assert operating_concurrency(ramp, 0.1, None) is None
    assert math.isclose(ramp[2].output_tps, 1000.0)


@pytest.mark.parametrize(
    ("patch", "words", "used"),
    [
        (
            {"steps": [bench_step(8, 1e6, 0.2, 0.02)]},
            "would need 4e+06 in flight (at most 2 req/s)",
            False,
        ),
        ({"steps": [bench_step(8, 0.0, 0.2, 0.02)]}, "concurrency 8: 0 req/s", False),
        ({"tensorParallelSize": 2}, "measured at TP 2, not this plan's TP 1", False),
        ({"model": "acme/other-70b"}, "measured on model 'acme/other-70b'", True),
    ],
)
def test_a_measurement_the_plan_cannot_trust_is_named(
    patch: dict[str, Any], words: str, used: bool
) -> None:
    """Before: 1e6 req/s at concurrency 8 sized one replica for a million requests a second;
    a 0 req/s step sized 64 replicas; another TP or model was used or dropped silently."""
    plan = plan_service(make_spec(profile=PROFILE | patch))
    assert any(words in w for w in plan.warnings), plan.warnings
    assert bool(plan.sources) is used
