"""The advice the plan already computes: each line fires when its case holds, stays silent when
it does not, and carries numbers another plan (or the arithmetic) confirms."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import EXAMPLES, spec
from tokenscale.api.manifest import parse_manifests
from tokenscale.catalog.vllm_metrics import INTER_TOKEN_BUCKETS, TTFT_BUCKETS
from tokenscale.planning import Conditions, plan_at, plan_service, resolve
from tokenscale.planning.advice import (
    advise,
    bucket_advice,
    bucket_of,
    fp8_advice,
    knee_advice,
    nearly_idle_advice,
    redundancy_advice,
    slo_unit_advice,
    tp_auto_advice,
)
from tokenscale.planning.planner import layout_of

L4_CHAT = {
    "hardware": {"gpu": "L4-24GB", "tensorParallelSize": 1},
    "workload": {
        "rps": {"mean": 8},
        "inputTokens": {"mean": 800, "p99": 4000},
        "outputTokens": {"mean": 200, "p99": 1000},
        "maxContextTokens": 8192,
    },
    "slo": {"ttftP99Seconds": 2.0, "tpotP99Seconds": 0.08},
}


def _gpus(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) GPUs", text)]


def test_tp_auto_needs_fewer_gpus_and_says_how_many() -> None:
    s = spec(**L4_CHAT)
    plan = plan_service(s)
    (line,) = tp_auto_advice(s, plan)
    auto = plan_service(
        spec(**{**L4_CHAT, "hardware": {"gpu": "L4-24GB", "tensorParallelSize": "auto"}})
    )
    assert auto.replicas is not None
    assert plan.replicas is not None
    theirs = auto.replicas.with_redundancy * auto.gpus_per_replica
    mine = plan.replicas.with_redundancy * plan.gpus_per_replica
    assert theirs < mine
    assert _gpus(line)[0] == theirs
    assert f"your {mine:,}" in line
    assert f"TP {auto.tensor_parallel_size}" in line


def test_no_tp_advice_when_the_tp_is_already_auto() -> None:
    s = spec(**{**L4_CHAT, "hardware": {"gpu": "L4-24GB", "tensorParallelSize": "auto"}})
    assert tp_auto_advice(s, plan_service(s)) == []


def test_fp8_advice_names_the_fp8_plan_count() -> None:
    s = spec(**L4_CHAT)
    plan = plan_service(s)
    (line,) = fp8_advice(s, plan)
    fp8 = plan_service(
        spec(
            **{
                **L4_CHAT,
                "model": {"name": s.model.name, "catalog": "llama-3.1-8b", "weightDtype": "fp8"},
            }
        )
    )
    assert fp8.replicas is not None
    assert _gpus(line)[0] == fp8.replicas.with_redundancy * fp8.gpus_per_replica


def test_no_fp8_advice_on_a_gpu_without_fp8_cores_or_for_fp8_weights() -> None:
    a100 = spec(**{**L4_CHAT, "hardware": {"gpu": "A100-SXM-80GB", "tensorParallelSize": 1}})
    assert fp8_advice(a100, plan_service(a100)) == []
    fp8 = spec(
        **{**L4_CHAT, "model": {"name": "x", "catalog": "llama-3.1-8b", "weightDtype": "fp8"}}
    )
    assert fp8_advice(fp8, plan_service(fp8)) == []


def test_one_replica_is_no_redundancy() -> None:
    s = spec(workload={"rps": {"mean": 0.1}})
    plan = plan_service(s)
    assert plan.replicas is not None
    assert plan.replicas.total == 1
    (line,) = redundancy_advice(s, plan)
    assert "no redundancy" in line
    two = spec(workload={"rps": {"mean": 0.1}}, scaling={"minReplicas": 2})
    assert redundancy_advice(two, plan_service(two)) == []


@pytest.mark.parametrize(
    ("field", "value", "fires"),
    [
        ("ttftP99Seconds", 2, False),
        ("tpotP99Seconds", 0.05, False),
        ("e2eP99Seconds", 30000, True),
        ("e2eP99Seconds", 120, False),
    ],
)
def test_slo_unit_typos(field: str, value: float, fires: bool) -> None:
    slo = {"ttftP99Seconds": None, "tpotP99Seconds": None, field: value}
    lines = slo_unit_advice(spec(slo=slo))
    assert bool(lines) is fires
    if fires:
        assert (
            f"{field}: {value:g} — did you mean milliseconds ({field}: {value / 1e3:g})" in lines[0]
        )


def test_a_tpot_slo_inside_a_bucket_names_the_bucket() -> None:
    (line,) = bucket_advice(spec(slo={"ttftP99Seconds": 2.5, "tpotP99Seconds": 0.03}))
    assert "spec.slo.tpotP99Seconds: 30 ms" in line
    assert "25–50 ms" in line
    assert "vllm:request_time_per_output_token_seconds" in line


def test_an_slo_on_a_bucket_bound_is_silent() -> None:
    assert bucket_advice(spec(slo={"ttftP99Seconds": 1.0, "tpotP99Seconds": 0.05})) == []


@given(
    st.floats(min_value=1e-3, max_value=70.0), st.sampled_from([TTFT_BUCKETS, INTER_TOKEN_BUCKETS])
)
def test_bucket_of_brackets_the_value(value: float, buckets: tuple[float, ...]) -> None:
    found = bucket_of(value, buckets)
    if found is None:
        assert value > buckets[-1] or any(abs(value - b) <= 0.01 * b for b in buckets)
    else:
        lo, hi = found
        assert lo < value < hi
        assert hi in buckets
        assert lo == 0.0 or lo in buckets
        assert not [b for b in buckets if lo < b < hi]


def test_a_replica_that_serves_only_nearly_idle_says_why() -> None:
    s = spec(
        **{
            **L4_CHAT,
            # just above one 4,000-token prompt's own TTFT (0.70 s with its request overhead)
            "slo": {"ttftP99Seconds": 0.75, "tpotP99Seconds": 0.08},
        }
    )
    plan = plan_service(s)
    lines = nearly_idle_advice(s, plan)
    (line,) = [x for x in lines if "prefill" in x]
    found = re.search(r"takes ([\d.,]+) (ms|s) to prefill", line)
    assert found is not None
    seconds = float(found.group(1).replace(",", "")) / (1e3 if found.group(2) == "ms" else 1)
    # the roofline's lower bound: 2 × params × prompt FLOPs at the L4's BF16 peak (121 TFLOPS)
    assert seconds >= 2 * 8.03e9 * 4000 / 121e12
    assert seconds <= 0.75
    assert "4,000 tokens" in line


def test_a_comfortable_plan_gets_no_nearly_idle_line() -> None:
    s = spec()
    assert nearly_idle_advice(s, plan_service(s)) == []


def test_advise_collects_every_line() -> None:
    s = spec(**{**L4_CHAT, "slo": {"ttftP99Seconds": 2.0, "tpotP99Seconds": 0.08}})
    lines = advise(s, plan_service(s))
    assert any("tensorParallelSize: auto" in x for x in lines)
    assert any("FP8 weights" in x for x in lines)
    assert any("75–100 ms" in x for x in lines)


def test_the_knee_below_the_slo_batch_says_the_gpus_at_the_slo_batch_and_the_ratio() -> None:
    """Llama-3.1-70B FP8 on H100 (the example): the knee caps the batch below what the SLOs
    allow; the line gives the GPUs at the SLO batch (the live engine's sizing) and a
    kneeTpotRatio that, set in the spec, plans exactly that fleet — after which the line is
    gone. (The BF16 TP 4 example served here until the M/G/1 queue: its SLO batch now needs the
    same 5 replicas as the knee, the concurrency constraint binding there.)"""
    example = next(e for e in EXAMPLES if e.stem == "llama-3.1-70b-h100-fp8")
    service = parse_manifests(example.read_text())[0]
    s, name = service.spec, service.metadata.name
    plan = plan_service(s, name)
    lim = plan.concurrency_limits
    assert lim.slo is not None
    assert lim.slo > lim.knee
    (line,) = knee_advice(s, plan, name)
    at_slo = plan_at(resolve(s, name), Conditions(workload=s.workload, knee="slo"), layout_of(plan))
    assert at_slo.replicas is not None
    assert plan.replicas is not None
    theirs = at_slo.replicas.with_redundancy * at_slo.gpus_per_replica
    mine = plan.replicas.with_redundancy * plan.gpus_per_replica
    assert _gpus(line) == [theirs]
    assert f"instead of {mine:,}" in line
    assert theirs < mine
    match = re.search(r"kneeTpotRatio: ([\d.]+)", line)
    assert match is not None
    lifted = s.model_copy(
        update={
            "assumptions": s.assumptions.model_copy(
                update={"knee_tpot_ratio": float(match.group(1))}
            )
        }
    )
    again = plan_service(lifted, name)
    assert again.gpus_total == theirs
    assert knee_advice(lifted, again, name) == []
    # no SLO batch above the knee, no line (the L4 chat: the SLOs bind first)
    l4 = spec(**L4_CHAT)
    assert knee_advice(l4, plan_service(l4)) == []
