"""``spec.workloadRef``: the plan is made at the layout the referenced pod template runs; the
``WorkloadMatchesSpec`` condition still compares that template with the spec as written."""

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import spec
from tokenscale.api.inference_service import InferenceService, ObjectMeta
from tokenscale.controller.running_layout import SOURCE_KEY, Running, at_running_layout, noted
from tokenscale.controller.workload_ref import (
    Found,
    engine_settings,
    matches_condition,
    pod_template,
)
from tokenscale.planning import plan_service
from tokenscale.render import render_bundle

GPU = "nvidia.com/gpu"


def _running(**flags: str) -> Running:
    return Running("Deployment ns/their-vllm", dict(flags))


def test_each_running_flag_becomes_the_spec_key_the_planner_takes() -> None:
    s = spec(serving={"maxNumSeqs": 256})
    running = _running(
        **{
            "--tensor-parallel-size": "2",
            "--max-num-seqs": "48",
            "--max-num-batched-tokens": "4096",
            "--max-model-len": "8192",
        }
    )
    adjusted, notes = at_running_layout(s, running)
    assert adjusted.hardware.tensor_parallel_size == 2
    assert adjusted.serving.max_num_seqs == 48
    assert adjusted.serving.max_num_batched_tokens == 4096
    assert adjusted.workload.max_context_tokens == 8192
    assert s.serving.max_num_seqs == 256  # the spec itself is not changed
    assert notes == [
        "--tensor-parallel-size 2",
        "--max-num-seqs 48",
        "--max-num-batched-tokens 4096",
        "--max-model-len 8192",
    ]
    plan = plan_service(adjusted, "test")
    assert (plan.tensor_parallel_size, plan.max_num_seqs) == (2, 48)
    assert (plan.max_num_batched_tokens, plan.max_model_len) == (4096, 8192)
    said = noted(plan, running, s).sources[SOURCE_KEY]
    assert said.startswith("the running pod template of Deployment ns/their-vllm")
    assert "--max-num-seqs 48" in said
    assert noted(plan, None, s) is plan


def test_an_absent_flag_is_vllms_default() -> None:
    s = spec(hardware={"tensorParallelSize": 4}, serving={"maxNumSeqs": 64})
    adjusted, notes = at_running_layout(s, _running())
    assert adjusted.hardware.tensor_parallel_size == 1
    assert adjusted.serving.max_num_seqs is None
    assert adjusted.serving.max_num_batched_tokens is None
    assert adjusted.workload.max_context_tokens is None
    assert "--max-num-seqs vLLM's default" in notes


def test_what_the_planner_cannot_take_is_not_adopted_and_says_why() -> None:
    s = spec(hardware={"tensorParallelSize": 2, "gpusPerNode": 2}, serving={"maxNumSeqs": 64})
    adjusted, notes = at_running_layout(
        s,
        _running(
            **{
                "--tensor-parallel-size": "4",  # wider than a node of 2
                "--max-num-seqs": "lots",
                "--pipeline-parallel-size": "2",
            }
        ),
    )
    assert adjusted.hardware.tensor_parallel_size == 2
    assert adjusted.serving.max_num_seqs == 64
    assert any(n.startswith("not adopted: --tensor-parallel-size 4") for n in notes)
    assert any(n.startswith("not adopted: --max-num-seqs lots") for n in notes)
    assert any(n.startswith("not adopted: --pipeline-parallel-size 2") for n in notes)
    three = at_running_layout(spec(), _running(**{"--tensor-parallel-size": "3"}))
    assert three[0].hardware.tensor_parallel_size == 1


def test_without_a_running_template_the_spec_is_planned_as_written() -> None:
    s = spec()
    assert at_running_layout(s, None) == (s, [])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tp=st.sampled_from(["auto", 1, 2, 4]),
    seqs=st.one_of(st.none(), st.integers(8, 512)),
    budget=st.one_of(st.none(), st.sampled_from([2048, 4096, 8192, 16384])),
    context=st.one_of(st.none(), st.sampled_from([4096, 16384, 65536])),
    rps=st.sampled_from([2, 10, 40]),
)
def test_a_template_tokenscale_rendered_maps_back_to_the_same_plan(
    tp: Any, seqs: int | None, budget: int | None, context: int | None, rps: int
) -> None:
    """Planning at the layout of the template tokenscale rendered for a plan gives that plan
    again: the same layout, batch limits and replicas."""
    s = spec(
        hardware={"tensorParallelSize": tp},
        serving={"maxNumSeqs": seqs, "maxNumBatchedTokens": budget},
        workload={"maxContextTokens": context, "rps": {"mean": rps}},
    )
    plan = plan_service(s, "test")
    if plan.replicas is None:
        return
    template = pod_template(render_bundle("test", "ns", s, plan, 1).workload)
    assert template is not None
    settings_ = engine_settings(template, GPU)
    assert settings_ is not None
    again = plan_service(at_running_layout(s, _running(**settings_))[0], "test")
    assert again.replicas is not None
    assert again.tensor_parallel_size == plan.tensor_parallel_size
    assert again.max_num_seqs == plan.max_num_seqs
    assert again.max_num_batched_tokens == plan.max_num_batched_tokens
    assert again.max_model_len == plan.max_model_len
    assert again.replicas.total == plan.replicas.total


def test_the_condition_compares_with_the_spec_as_written_not_the_running_plan() -> None:
    """The bundle is rendered at the running layout (so it matches what runs); the condition
    still names how the running template differs from what the spec alone plans."""
    s = spec()
    own = plan_service(s, "test")
    theirs = render_bundle("test", "ns", s, own, 1).workload
    template = pod_template(theirs)
    assert template is not None
    container = template["spec"]["containers"][0]
    args = list(container["args"])
    args[args.index("--tensor-parallel-size") + 1] = "2"
    args[args.index("--max-num-seqs") + 1] = "40"
    container["args"] = args
    container["resources"]["limits"][GPU] = "2"
    obj = {**theirs, "spec": {**theirs["spec"], "template": template}}
    running = engine_settings(template, GPU)
    assert running is not None
    at = plan_service(at_running_layout(s, _running(**running))[0], "test")
    assert (at.tensor_parallel_size, at.max_num_seqs) == (2, 40)
    bundle = render_bundle("test", "ns", s, at, 1)  # what reconcile renders now
    service = InferenceService(metadata=ObjectMeta(name="test"), spec=s)
    got = matches_condition([], Found(object=obj), bundle, service, "2026-01-01T00:00:00Z", 1)
    assert (got.status, got.reason) == ("False", "Differs")
    assert "--tensor-parallel-size: runs 2, the spec plans 1" in got.message
    assert f"--max-num-seqs: runs 40, the spec plans {own.max_num_seqs}" in got.message
    assert "gpus: runs 2, the spec plans 1" in got.message
    assert "planned at the running layout" in got.message
