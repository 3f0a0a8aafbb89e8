"""The vLLM Deployment."""

import math
from typing import Any

from tokenscale.api.hardware import GpuSpec
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.quantity import parse_quantity
from tokenscale.planning.formulas import GIB
from tokenscale.planning.result import Plan
from tokenscale.render.engine_args import VLLM_PORT, engine_args
from tokenscale.render.labels import (
    CONFIG_HASH_ANNOTATION,
    common_labels,
    selector_labels,
    workload_labels,
)
from tokenscale.render.lora import lora_volume
from tokenscale.render.names import child_name

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
#: Bytes/s a replica is assumed to load weights at (object store or PVC to host to GPU).
LOAD_BYTES_PER_S = 400e6
#: Engine start, profiling and CUDA-graph capture on top of the weight load.
START_OVERHEAD_S = 180
PROBE_PERIOD_S = 10
#: Seconds a terminating pod keeps serving before it drains, so that the endpoints controller
#: and every proxy have stopped sending it new requests (admission stops here).
ENDPOINT_DELAY_S = 5
#: Seconds left after the drain for vLLM's own shutdown on SIGTERM.
SHUTDOWN_MARGIN_S = 15
#: Upper bound of the drain, whatever the plan says (a runaway estimate must not pin a pod).
MAX_DRAIN_S = 1800
DRAIN_SCRIPT = """\
import time, urllib.request
deadline = time.monotonic() + {budget}
time.sleep({delay})
while time.monotonic() < deadline:
    try:
        text = urllib.request.urlopen("http://127.0.0.1:{port}/metrics", timeout=2).read()
    except Exception:
        break
    busy = sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.decode().splitlines()
        if line.startswith(("vllm:num_requests_running", "vllm:num_requests_waiting"))
    )
    if busy == 0:
        break
    time.sleep(1)
"""


def drain_seconds(plan: Plan) -> int:
    """How long a removed replica may take to finish its in-flight requests: the plan's E2E P99
    at the operating batch (a request admitted just before admission stopped takes that long at
    worst, P99). Not the estimate at the current load: that moves with the replica count, and a
    scale must never change the pod template (it would roll every pod)."""
    e2e = plan.e2e_p99_at_capacity_s or plan.e2e_p99_estimate_s
    if not math.isfinite(e2e) or e2e <= 0:
        return MAX_DRAIN_S
    return min(MAX_DRAIN_S, math.ceil(e2e))


def termination_grace_seconds(plan: Plan) -> int:
    """``terminationGracePeriodSeconds``: stop admission, drain for the E2E P99, shut down."""
    return ENDPOINT_DELAY_S + drain_seconds(plan) + SHUTDOWN_MARGIN_S


def pre_stop(plan: Plan) -> dict[str, Any]:
    """The preStop hook: wait until no endpoint routes here any more, then until vLLM reports
    no running or waiting request, bounded by the drain budget; then the kubelet sends SIGTERM.
    Python is in every vLLM image; no shell or curl is assumed."""
    script = DRAIN_SCRIPT.format(
        budget=ENDPOINT_DELAY_S + drain_seconds(plan), delay=ENDPOINT_DELAY_S, port=VLLM_PORT
    )
    return {"exec": {"command": ["python3", "-c", script]}}


def gpus_per_pod(plan: Plan) -> int:
    """GPUs one pod requests: the replica's GPUs over the nodes it spans (TP on one node)."""
    return max(1, plan.gpus_per_replica // max(1, plan.nodes_per_replica))


def weight_bytes_per_pod(plan: Plan) -> float:
    """The share of the weights one pod loads (a pipeline stage, or one node's experts)."""
    return plan.weight_bytes / max(1, plan.nodes_per_replica)


def startup_budget_seconds(spec: InferenceServiceSpec, plan: Plan) -> int:
    """Seconds the startup probe allows: ``one pod's weight share / 400 MB/s + 180 s`` unless
    overridden (the pods of a multi-node replica load their shares in parallel)."""
    if spec.deployment.model_load_seconds is not None:
        return spec.deployment.model_load_seconds
    return math.ceil(weight_bytes_per_pod(plan) / LOAD_BYTES_PER_S) + START_OVERHEAD_S


def _resources(spec: InferenceServiceSpec, plan: Plan, gpu: GpuSpec) -> dict[str, Any]:
    """CPU 4 per GPU, host memory ``8 GiB × GPUs + 10 % of the pod's weight share`` plus, with
    LoRA, the host cache of ``maxCpuLoras`` adapters (each TP rank caches its own copy); GPUs =
    the pod's share of the layout exactly (TP on a single node).

    The user's requests and limits override these; a user limit below a default request lowers
    that request to the limit (the API validated that the user's own requests fit their limits).
    """
    gpus = gpus_per_pod(plan)
    host_gib = 8 * gpus + math.ceil(weight_bytes_per_pod(plan) / GIB * 0.1)
    if plan.lora is not None:
        host_gib += math.ceil(plan.lora.host_cache_bytes * gpus / GIB)
    requests: dict[str, str] = {"cpu": str(4 * gpus), "memory": f"{host_gib}Gi"}
    limits: dict[str, str] = {}
    user = spec.deployment.resources or {}
    requests.update({k: str(v) for k, v in dict(user.get("requests") or {}).items()})
    limits.update({k: str(v) for k, v in dict(user.get("limits") or {}).items()})
    for key, limit in limits.items():
        # a limit without a request: keep the default request unless it exceeds the limit
        # (the API server refuses a request above its limit)
        if key in requests and parse_quantity(requests[key]) > parse_quantity(limit):
            requests[key] = limit
    requests[gpu.resource_name] = str(gpus)
    limits[gpu.resource_name] = str(gpus)
    return {"requests": requests, "limits": limits}


def _probe(path: str, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": "http"},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def pod_template(name: str, spec: InferenceServiceSpec, plan: Plan, gpu: GpuSpec) -> dict[str, Any]:
    """The pod template, without the config-hash annotation (it is computed over this)."""
    d = spec.deployment
    env: list[dict[str, Any]] = []
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    if d.hf_token_secret:
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": d.hf_token_secret, "key": "HF_TOKEN"}},
            }
        )
    if d.model_cache_claim:
        env.append({"name": "HF_HOME", "value": "/models"})
        volumes.append(
            {"name": "model-cache", "persistentVolumeClaim": {"claimName": d.model_cache_claim}}
        )
        mounts.append({"name": "model-cache", "mountPath": "/models"})
    adapters = lora_volume(spec)
    if adapters is not None:
        volumes.append(adapters[0])
        mounts.append(adapters[1])
    if gpus_per_pod(plan) > 1:
        volumes.append(
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{d.shm_size_gib:g}Gi"}}
        )
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    env.extend(d.env)
    container: dict[str, Any] = {
        "name": "vllm",
        "image": spec.serving.image,
        "command": ["vllm", "serve"],
        "args": engine_args(spec, plan),
        "ports": [{"name": "http", "containerPort": VLLM_PORT, "protocol": "TCP"}],
        "resources": _resources(spec, plan, gpu),
        "startupProbe": _probe(
            "/health",
            PROBE_PERIOD_S,
            max(30, math.ceil(startup_budget_seconds(spec, plan) / PROBE_PERIOD_S)),
        ),
        "readinessProbe": _probe("/health", 5, 3),
        "livenessProbe": _probe("/health", 10, 3),
        "lifecycle": {"preStop": pre_stop(plan)},
    }
    if env:
        container["env"] = env
    if mounts:
        container["volumeMounts"] = mounts
    node_selector: dict[str, str] = {}
    if gpu.product_label:
        node_selector[GPU_PRODUCT_LABEL] = gpu.product_label
    node_selector.update(d.node_selector)
    tolerations = [{"key": gpu.resource_name, "operator": "Exists", "effect": "NoSchedule"}]
    tolerations.extend(d.tolerations)
    pod: dict[str, Any] = {
        "containers": [container],
        "tolerations": tolerations,
        "terminationGracePeriodSeconds": termination_grace_seconds(plan),
    }
    if node_selector:
        pod["nodeSelector"] = node_selector
    if volumes:
        pod["volumes"] = volumes
    for key, value in (
        ("affinity", d.affinity),
        ("serviceAccountName", d.service_account_name),
        ("priorityClassName", d.priority_class_name),
        ("runtimeClassName", d.runtime_class_name),
    ):
        if value:
            pod[key] = value
    if d.image_pull_secrets:
        pod["imagePullSecrets"] = [{"name": n} for n in d.image_pull_secrets]
    annotations = {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(VLLM_PORT),
        "prometheus.io/path": "/metrics",
        **d.annotations,
    }
    return {
        "metadata": {"labels": {**d.labels, **common_labels(name)}, "annotations": annotations},
        "spec": pod,
    }


def deployment(
    name: str,
    namespace: str,
    replicas: int,
    template: dict[str, Any],
    config_hash: str,
) -> dict[str, Any]:
    tmpl = {
        "metadata": {
            "labels": template["metadata"]["labels"],
            "annotations": {
                **template["metadata"]["annotations"],
                CONFIG_HASH_ANNOTATION: config_hash,
            },
        },
        "spec": template["spec"],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": child_name(name),
            "namespace": namespace,
            "labels": workload_labels(name, template["metadata"]["labels"]),
            "annotations": {CONFIG_HASH_ANNOTATION: config_hash},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector_labels(name)},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
            },
            "revisionHistoryLimit": 5,
            "progressDeadlineSeconds": 3600,
            "template": tmpl,
        },
    }
