"""``spec.workloadRef``: reading what a pod template someone else wrote runs, and naming how it
differs from the plan."""

from typing import Any

import pytest
from pydantic import ValidationError

from tests.helpers import spec
from tokenscale.controller.workload_ref import (
    differences,
    engine_settings,
    pod_template,
)
from tokenscale.planning import plan_service
from tokenscale.planning.inputs import resolve_gpu
from tokenscale.render import render_bundle


def _template(command: list[str], args: list[str], gpus: str | None = "1") -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": gpus}} if gpus else {}
    return {
        "spec": {
            "containers": [
                {"name": "sidecar", "image": "envoy", "args": ["--port", "9000"]},
                {"name": "engine", "command": command, "args": args, "resources": resources},
            ]
        }
    }


def test_flags_are_read_in_both_spellings_with_the_positional_model_and_aliases() -> None:
    t = _template(
        ["vllm", "serve"],
        ["meta-llama/Llama-3.1-8B-Instruct", "-tp", "2", "--max-num-seqs=128", "--port", "80"],
        gpus="2",
    )
    got = engine_settings(t, "nvidia.com/gpu")
    assert got == {
        "--model": "meta-llama/Llama-3.1-8B-Instruct",
        "--tensor-parallel-size": "2",
        "--max-num-seqs": "128",
        "gpus": "2",
    }
    # the whole command in args, a path to the binary, the module entry point
    for command, args in (
        ([], ["/usr/local/bin/vllm", "serve", "m", "--max-model-len", "4096"]),
        (["python3", "-m", "vllm.entrypoints.openai.api_server"], ["--model", "m"]),
    ):
        got = engine_settings(_template(command, args), "nvidia.com/gpu")
        assert got is not None
        assert got["--model"] == "m"
    assert engine_settings(_template(["sglang"], ["serve"]), "nvidia.com/gpu") is None


def test_the_rendered_template_matches_itself_and_each_change_is_named() -> None:
    s = spec()
    plan = plan_service(s, "test")
    bundle = render_bundle("test", "ns", s, plan, 2)
    template = pod_template(bundle.workload)
    assert template is not None
    resource = resolve_gpu(s).resource_name
    planned = engine_settings(template, resource)
    assert planned is not None
    assert differences(planned, planned) == []
    container = template["spec"]["containers"][0]
    args = list(container["args"])
    i = args.index("--max-num-seqs")
    args[i + 1] = str(int(args[i + 1]) * 2)
    args[args.index("--tensor-parallel-size") + 1] = "2"
    container["args"] = args
    container["resources"]["limits"][resource] = "2"
    running = engine_settings(template, resource)
    assert running is not None
    diff = differences(running, planned)
    assert [d.split(":")[0] for d in diff] == ["--tensor-parallel-size", "--max-num-seqs", "gpus"]
    assert f"--max-num-seqs: runs {int(args[i + 1])}, the spec plans {plan.max_num_seqs}" in diff


def test_an_absent_flag_is_vllms_default() -> None:
    running = {"--model": "m", "gpus": "1"}
    planned = {"--model": "m", "--tensor-parallel-size": "1", "--max-num-seqs": "64", "gpus": "1"}
    assert differences(running, planned) == [
        "--max-num-seqs: runs vLLM's default, the spec plans 64"
    ]


def test_a_leader_worker_set_template_is_its_leaders() -> None:
    lws = {"spec": {"leaderWorkerTemplate": {"leaderTemplate": {"spec": {"containers": []}}}}}
    assert pod_template(lws) == {"spec": {"containers": []}}
    assert pod_template({"spec": {"replicas": 2}}) is None


@pytest.mark.parametrize(
    "ref",
    [
        {"apiVersion": "apps/v1", "kind": "deployment", "name": "x"},  # kind is CamelCase
        {"apiVersion": "apps", "kind": "Deployment", "name": "x"},  # no version
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "Not_A_Name"},
    ],
)
def test_a_malformed_reference_is_refused(ref: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        spec(workloadRef=ref)
    assert spec(workloadRef={"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"})
