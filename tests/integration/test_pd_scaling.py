"""A prefill/decode service scaled role by role: real API server + operator + real Prometheus
scraping one vLLM metrics emulator (a fake engine, ``tests/support/vllm_emulator.py``) per role,
each target labelled with its role as the chart's PodMonitor labels a pod from
``llm-d.ai/role``.

Prompts queueing at the prefill pool scale the prefill Deployment and leave the decode one
alone; a full KV cache at the decode pool scales the decode Deployment and leaves prefill
alone. ``status.roles`` says each role's decision and ``kubectl get``'s table shows both counts.
"""

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import GROUP, PLURAL, VERSION, Objects
from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.api import InferenceService
from tokenscale.planning import plan_service
from tokenscale.playground.processes import Process, wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.scaling.roles import binding_rps_per_replica, pools

pytestmark = pytest.mark.integration


def _spec() -> dict[str, Any]:
    """Llama-3.1-8B, P/D on: the plan runs 1 prefill + 1 decode replica (ratio 1)."""
    return manifest(
        workload={"rps": {"mean": 0.5}},
        serving={"disaggregation": "on"},
        scaling={"minReplicas": 1, "maxReplicas": 6},
    )


@pytest.fixture
def role_pods(
    prometheus: PrometheusServer, namespace: str
) -> Iterator[dict[str, VllmMetricsEmulator]]:
    """One emulated engine per role, scraped with ``role=<role>``."""
    pods = {role: VllmMetricsEmulator().start() for role in ("prefill", "decode")}
    for role, pod in pods.items():
        prometheus.add_target(pod.target, namespace, "test", pod=f"test-{role}-0", role=role)
    yield pods
    for pod in pods.values():
        prometheus.remove_target(pod.target)
        pod.stop()


def _decode_on_full_kv(prefill_replicas: int, roles: dict[str, Any]) -> int:
    """Decode replicas once its KV cache fills while prompts still wait at the prefill pool:
    the ``kv_usage`` step (1 → 2), or more where the backlog floor asks for it
    (``scaling/roles.py``'s ``backlog_floor``): ``prefill_replicas`` engines at the plan's
    prefill rate feed ``ceil(their output ÷ a decode replica's rate)`` decode replicas, each
    rate × its role's calibration as status shows it (the emulator's prompts and answers are
    the spec's means, so no length rescaling). Bounded by maxReplicas."""
    spec = InferenceService.model_validate(_spec()).spec
    _, prefill, decode = pools(plan_service(spec))
    feed = prefill_replicas * binding_rps_per_replica(prefill, spec)
    feed *= roles["prefill"]["decision"].get("prefillCalibration") or 1.0
    carry = binding_rps_per_replica(decode, spec)
    carry *= roles["decode"]["decision"].get("calibration") or 1.0
    return min(max(2, math.ceil(feed / carry - 1e-9)), spec.scaling.max_replicas)


def _count(objects: Objects, role: str) -> int | None:
    dep = objects.deployment(f"test-{role}")
    return None if dep is None else dep.spec.replicas


def _scaled(objects: Objects, start: str) -> bool:
    return any(e.message.startswith(start) for e in objects.events("test") if e.reason == "Scaled")


def _roles(objects: Objects) -> dict[str, Any]:
    return dict(objects.get("test").get("status", {}).get("roles") or {})


def _table(api: client.ApiClient, namespace: str) -> dict[str, Any]:
    """What ``kubectl get infsvc`` prints: the API server's Table of the printer columns."""
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
    request = api.param_serialize(
        "GET",
        path,
        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*request)
    response.read()  # type: ignore[no-untyped-call]
    assert response.status == 200, response.data
    return dict(json.loads(response.data or b"{}"))


def test_each_role_scales_on_its_own_signal(
    start_metrics_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    api: client.ApiClient,
    role_pods: dict[str, VllmMetricsEmulator],
) -> None:
    prefill, decode = role_pods["prefill"], role_pods["decode"]
    prefill.set_state(running=1, waiting=0, kv_usage=0.05)
    prefill.set_load(Load(rps=0.5, prompt_tokens=1000, generation_tokens=1, ttft_s=0.2))
    decode.set_state(running=2, waiting=0, kv_usage=0.2)
    decode.set_load(Load(rps=0.5, prompt_tokens=1000, generation_tokens=200, tpot_s=0.01))
    op = start_metrics_operator(namespace, prometheus.url)
    objects.create(_spec())
    wait_for(
        lambda: _count(objects, "prefill") == 1 and _count(objects, "decode") == 1,
        60,
        "both roles at the plan's 1 replica",
    )
    wait_for(
        lambda: (objects.condition("test", "MetricsAvailable") or {}).get("status") == "True",
        60,
        "MetricsAvailable=True (both roles' series)",
    )
    roles = _roles(objects)
    assert roles["plannedRatio"] == 1.0
    assert {s["name"] for s in roles["prefill"]["decision"]["signals"]} == {
        "prefill_ttft_p99_s",
        "waiting_per_replica",
        "prompt_load",
    }
    assert {s["name"] for s in roles["decode"]["decision"]["signals"]} == {
        "tpot_p99_s",
        "kv_usage",
        "running_per_replica",
    }
    assert objects.deployment("test") is None  # no one-pool workload beside the roles

    # prompts queue at the prefill pool: prefill scales, decode holds
    prefill.set_state(running=1, waiting=10, kv_usage=0.05)
    wait_for(lambda: _count(objects, "prefill") == 2, 60, "prefill scaled up to 2")
    wait_for(
        lambda: _scaled(objects, "Scaled prefill Deployment test-prefill 1→2: waiting_per_replica"),
        30,
        "the prefill Scaled event",
    )
    assert _count(objects, "decode") == 1
    wait_for(
        lambda: (_roles(objects).get("prefill") or {}).get("replicas") == 2,
        30,
        "status.roles.prefill.replicas = 2",
    )
    roles = _roles(objects)
    assert roles["decode"]["replicas"] == 1
    assert roles["ratio"] == 2.0
    levels = {s["name"]: s["level"] for s in roles["prefill"]["decision"]["signals"]}
    assert levels["waiting_per_replica"] == "high"
    assert roles["decode"]["decision"]["cause"] != "Pressure"

    # the decode pool's KV cache fills: decode scales, prefill keeps its 2 (its prompts still
    # wait, so decode takes what the backlogged prefill pool feeds where that is more than 2)
    want = _decode_on_full_kv(2, roles)
    decode.set_state(running=40, waiting=0, kv_usage=0.97)
    wait_for(lambda: _count(objects, "decode") == want, 60, f"decode scaled up to {want}")
    wait_for(
        lambda: _scaled(objects, f"Scaled decode Deployment test-decode 1→{want}: kv_usage 0.97"),
        30,
        "the decode Scaled event",
    )
    assert _count(objects, "prefill") == 2
    wait_for(
        lambda: (_roles(objects).get("decode") or {}).get("replicas") == want,
        30,
        f"status.roles.decode.replicas = {want}",
    )
    levels = {s["name"]: s["level"] for s in _roles(objects)["decode"]["decision"]["signals"]}
    assert levels["kv_usage"] == "high"
    status = objects.get("test")["status"]
    assert status["replicas"] == 2 + want  # prefill + decode
    table = _table(api, namespace)
    names = [c["name"] for c in table["columnDefinitions"]]
    row = next(r for r in table["rows"] if r["object"]["metadata"]["name"] == "test")
    cells = dict(zip(names, row["cells"], strict=True))
    assert (cells["Prefill"], cells["Decode"]) == (2, want)
    assert op.alive()
