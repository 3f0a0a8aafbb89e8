"""``spec.workloadRef``: find the referenced workload, its replicas and pods through ``/scale``,
and compare what its pod template runs with what the spec plans.

The comparison reads the template's ``vllm serve`` container (command and args, ``--flag v``
and ``--flag=v``, the model as ``--model`` or the first positional after ``serve``) and the
GPU limit, and the same from the pod template tokenscale would render for the plan; each key
that differs is named. Only the keys the plan sets are compared: the model, tensor and
pipeline parallel sizes, ``--max-model-len``, ``--max-num-seqs``,
``--max-num-batched-tokens`` and the GPUs per pod.
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from tokenscale.api.inference_service import API_GROUP, InferenceService, InferenceServiceSpec
from tokenscale.api.status import Condition
from tokenscale.controller.api import ScaleApi
from tokenscale.controller.status import condition
from tokenscale.kube.scale import Resource
from tokenscale.planning import plan_service
from tokenscale.planning.inputs import resolve_gpu
from tokenscale.render.bundle import RenderedBundle, render_bundle

COMPARED = (
    "--model",
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--max-model-len",
    "--max-num-seqs",
    "--max-num-batched-tokens",
)
ALIASES = {"-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size"}
DEFAULTS = {"--tensor-parallel-size": "1", "--pipeline-parallel-size": "1"}
"""vLLM's defaults where an absent flag has a known meaning for the comparison."""


@dataclass(frozen=True)
class Found:
    """The referenced workload as found (``problem`` set: it cannot be scaled, and why)."""

    where: Resource | None = None
    object: dict[str, Any] | None = None
    replicas: int | None = None
    selector: str | None = None
    problem: str | None = None
    reason: str | None = None


def find(kube: ScaleApi, namespace: str, api_version: str, kind: str, name: str) -> Found:
    """Discovery, the object, then its Scale; the first that fails is the problem."""
    what = f"{kind} {namespace}/{name} ({api_version})"
    where = kube.scalable(api_version, kind)
    if where is None:
        return Found(
            problem=f"the API server does not serve kind {kind} in {api_version}: fix "
            "spec.workloadRef.apiVersion/kind",
            reason="TargetUnknown",
        )
    if not where.scalable:
        return Found(
            where=where,
            problem=f"{kind} ({where.plural}) has no /scale subresource: tokenscale can scale "
            "only a workload that serves one",
            reason="TargetNotScalable",
        )
    group = api_version.rpartition("/")[0]
    if group == API_GROUP and kind == "InferenceService":
        return Found(
            where=where,
            problem=f"spec.workloadRef names {what}: an InferenceService is scaled by its own "
            "spec, not through another one; reference the workload it runs, or remove "
            "spec.workloadRef",
            reason="TargetNotAllowed",
        )
    obj = kube.read_object(where, namespace, name)
    if obj is None:
        return Found(
            where=where,
            problem=f"{what} does not exist (yet): create it or fix spec.workloadRef.name; "
            "tokenscale checks again every interval",
            reason="TargetMissing",
        )
    controller = _controller_of(obj)
    if controller is not None:
        return Found(
            where=where,
            problem=f"spec.workloadRef names {what}, whose replicas its controller "
            f"{controller} sets: scale its owner (point spec.workloadRef at {controller}, "
            "unless another InferenceService scales it already)",
            reason="TargetNotAllowed",
        )
    try:
        scale = kube.read_scale(where, namespace, name) or {}
    except ApiException as exc:
        return Found(
            where=where,
            problem=f"reading the /scale of {what} failed: HTTP {exc.status} {exc.reason}: "
            "fix spec.workloadRef or the workload; tokenscale checks again every interval",
            reason="TargetNotScalable",
        )
    replicas = (scale.get("spec") or {}).get("replicas")
    selector = (scale.get("status") or {}).get("selector")
    return Found(
        where=where,
        object={**obj, "kind": kind},
        replicas=int(replicas) if replicas is not None else None,
        selector=str(selector) if selector else None,
    )


def _controller_of(obj: dict[str, Any]) -> str | None:
    """``Kind name`` of the object's controlling owner (a ReplicaSet's Deployment, the
    Deployment an InferenceService renders), None when nothing controls it."""
    for owner in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(owner, dict) and owner.get("controller") is True:
            return f"{owner.get('kind')} {owner.get('name')}"
    return None


def pod_template(obj: dict[str, Any]) -> dict[str, Any] | None:
    """``spec.template`` (Deployment, StatefulSet, ReplicaSet, most custom resources), or an
    LWS' leader template; None where the object keeps none there."""
    spec = obj.get("spec") or {}
    if isinstance(spec.get("template"), dict):
        return dict(spec["template"])
    lws = (spec.get("leaderWorkerTemplate") or {}).get("leaderTemplate") or (
        spec.get("leaderWorkerTemplate") or {}
    ).get("workerTemplate")
    return dict(lws) if isinstance(lws, dict) else None


def _serve_args(argv: list[str]) -> list[str] | None:
    """The arguments after ``vllm serve`` (the model positional first, if given)."""
    for i, word in enumerate(argv):
        if word.endswith("vllm") and i + 1 < len(argv) and argv[i + 1] == "serve":
            return argv[i + 2 :]
        if word == "vllm.entrypoints.openai.api_server":
            return argv[i + 1 :]
    return None


def engine_settings(template: dict[str, Any], gpu_resource: str) -> dict[str, str] | None:
    """The compared flags and ``gpus`` of the template's vLLM container (None: none runs
    ``vllm serve``)."""
    for container in (template.get("spec") or {}).get("containers") or []:
        argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
        args = _serve_args(argv)
        if args is None:
            continue
        seen: dict[str, str] = {}
        i = 0
        if args and not args[0].startswith("-"):
            seen["--model"] = args[0]
            i = 1
        while i < len(args):
            word = args[i]
            flag, _, inline = word.partition("=")
            flag = ALIASES.get(flag, flag)
            if flag in COMPARED:
                if inline:
                    seen[flag] = inline
                elif i + 1 < len(args):
                    seen[flag] = args[i + 1]
                    i += 1
            i += 1
        limits = (container.get("resources") or {}).get("limits") or {}
        requests = (container.get("resources") or {}).get("requests") or {}
        gpus = limits.get(gpu_resource, requests.get(gpu_resource))
        seen["gpus"] = str(gpus) if gpus is not None else "0"
        return seen
    return None


def differences(running: dict[str, str], planned: dict[str, str]) -> list[str]:
    """``flag: runs X, the spec plans Y`` for each compared key that differs (an absent flag
    is vLLM's default: named as such unless the default is known)."""
    out = []
    for key in (*COMPARED, "gpus"):
        want = planned.get(key, DEFAULTS.get(key))
        have = running.get(key, DEFAULTS.get(key))
        if want is None or have == want:
            continue
        shown = "vLLM's default" if have is None else have
        out.append(f"{key}: runs {shown}, the spec plans {want}")
    return out


_SPEC_TEMPLATES: OrderedDict[str, dict[str, Any] | None] = OrderedDict()
_SPEC_TEMPLATES_LOCK = threading.Lock()
SPEC_TEMPLATES_SIZE = 256


def spec_template(spec: InferenceServiceSpec, name: str) -> dict[str, Any] | None:
    """The pod template tokenscale renders for the spec *as written* (its own plan, not the
    running layout's); None when that plan cannot serve. Remembered per spec (256 specs)."""
    key = name + "\n" + spec.model_dump_json()
    with _SPEC_TEMPLATES_LOCK:
        if key in _SPEC_TEMPLATES:
            _SPEC_TEMPLATES.move_to_end(key)
            return _SPEC_TEMPLATES[key]
    plan = plan_service(spec, name)
    template = None
    if plan.replicas is not None and not plan.is_mix and not plan.is_disaggregated:
        template = pod_template(render_bundle(name, "default", spec, plan, 1).workload)
    with _SPEC_TEMPLATES_LOCK:
        _SPEC_TEMPLATES[key] = template
        while len(_SPEC_TEMPLATES) > SPEC_TEMPLATES_SIZE:
            _SPEC_TEMPLATES.popitem(last=False)
    return template


def matches_condition(
    previous: list[Condition],
    found: Found,
    bundle: RenderedBundle,
    service: InferenceService,
    now: str,
    gen: int | None,
) -> Condition:
    """``WorkloadMatchesSpec``: True when the referenced pod template runs what the spec as
    written plans (:func:`spec_template`; ``bundle``'s template when that plan cannot serve),
    False naming each difference, Unknown when no ``vllm serve`` container is found."""
    resource = resolve_gpu(service.spec).resource_name
    theirs = pod_template(found.object or {})
    ours = spec_template(service.spec, service.metadata.name) or pod_template(bundle.workload)
    running = None if theirs is None else engine_settings(theirs, resource)
    planned = None if ours is None else engine_settings(ours, resource)
    if running is None or planned is None:
        return condition(
            previous,
            "WorkloadMatchesSpec",
            "Unknown",
            "NoVllmContainer",
            "no container of the referenced pod template runs `vllm serve`: nothing to compare",
            now,
            gen,
        )
    diff = differences(running, planned)
    if diff:
        return condition(
            previous,
            "WorkloadMatchesSpec",
            "False",
            "Differs",
            "; ".join(diff) + " (planned at the running layout: status.plan.sources.layout)",
            now,
            gen,
        )
    return condition(
        previous,
        "WorkloadMatchesSpec",
        "True",
        "Matches",
        "the referenced pod template runs the planned model, layout and batch limits",
        now,
        gen,
    )
