"""Kueue admission: its queue and priority labels, set in ``spec.deployment.labels``, are on
every workload object (one-GPU Deployment, each variant's Deployment, a LeaderWorkerSet) and
on the pods; other extra labels stay on the pods; the selector never changes."""

from typing import Any

import pytest
import yaml

from tests.helpers import ROOT
from tokenscale.api.inference_service import InferenceService
from tokenscale.planning import plan_service
from tokenscale.render import render_bundle
from tokenscale.render.labels import selector_labels
from tokenscale.scaling import decide_plan_only

KUEUE = {"kueue.x-k8s.io/queue-name": "team-a", "kueue.x-k8s.io/priority-class": "serving"}
EXAMPLES = [
    "llama-3.1-8b-l4.yaml",  # one GPU type: a Deployment
    "variants/llama-3.1-8b-h100-l40s.yaml",  # a Deployment per variant
    "llama-3.1-405b-h100-bf16.yaml",  # a replica over several nodes: a LeaderWorkerSet
]


def _workloads(example: str, labels: dict[str, str]) -> list[dict[str, Any]]:
    body = yaml.safe_load((ROOT / "deploy" / "examples" / example).read_text())
    body["spec"].setdefault("deployment", {})["labels"] = labels
    service = InferenceService.model_validate(body)
    plan = plan_service(service.spec, "svc")
    bundle = render_bundle("svc", "ns", service.spec, plan, decide_plan_only(plan, None).replicas)
    return list(bundle.workloads or (bundle.workload,))


def _pod_labels(workload: dict[str, Any]) -> list[dict[str, str]]:
    spec = workload["spec"]
    if "template" in spec:
        return [spec["template"]["metadata"]["labels"]]
    lws = spec["leaderWorkerTemplate"]
    return [lws[t]["metadata"]["labels"] for t in ("leaderTemplate", "workerTemplate")]


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_kueue_labels_are_on_the_workload_and_its_pods(example: str) -> None:
    plain = _workloads(example, {})
    queued = _workloads(example, {**KUEUE, "team": "search"})
    assert len(queued) == len(plain) >= 1
    kinds = {w["kind"] for w in queued}
    assert kinds == {"LeaderWorkerSet"} if "405b" in example else kinds == {"Deployment"}
    for before, after in zip(plain, queued, strict=True):
        meta = after["metadata"]["labels"]
        assert {k: meta[k] for k in KUEUE} == KUEUE
        assert "team" not in meta  # not a Kueue key: on the pods only
        assert meta == {**before["metadata"]["labels"], **KUEUE}
        for pod in _pod_labels(after):
            assert {k: pod[k] for k in KUEUE} == KUEUE
            assert pod["team"] == "search"
        if after["kind"] == "Deployment":  # the selector is immutable: labels never enter it
            assert after["spec"]["selector"] == before["spec"]["selector"]
            assert set(selector_labels("svc")) <= set(after["spec"]["selector"]["matchLabels"])
