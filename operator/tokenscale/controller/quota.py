"""Read the namespace's ResourceQuotas and the GPUs this service's pods request, and bound a
decision by them (the pure bound: ``scaling/quota.py``)."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.quantity import parse_quantity
from tokenscale.planning.inputs import resolve_gpu
from tokenscale.planning.result import Plan
from tokenscale.render import selector_string
from tokenscale.scaling.quota import GpuQuota, QuotaBound, bound_by_quota

_TERMINAL = ("Succeeded", "Failed")


class QuotaReader(Protocol):
    def list_resource_quotas(self, namespace: str) -> list[dict[str, Any]]: ...

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]: ...


def _counts(figures: Mapping[str, Any] | None) -> dict[str, int]:
    """``{key: quantity}`` → whole counts, for the ``requests.`` keys of extended resources;
    a figure that is not a quantity is left out (the quota admission refuses such quotas)."""
    out: dict[str, int] = {}
    for key, value in (figures or {}).items():
        if not key.startswith("requests.") or "/" not in key:
            continue
        try:
            out[key] = int(parse_quantity(str(value)))
        except ValueError:
            continue
    return out


def gpu_quotas(items: list[dict[str, Any]]) -> list[GpuQuota]:
    """The quotas' extended-resource figures (``status.hard``/``status.used``; ``spec.hard``
    until the quota controller has filled the status, with nothing used)."""
    quotas = []
    for q in items:
        status = q.get("status") or {}
        hard = _counts(status.get("hard") or (q.get("spec") or {}).get("hard"))
        if hard:
            name = (q.get("metadata") or {}).get("name", "")
            quotas.append(GpuQuota(name, hard, _counts(status.get("used"))))
    return quotas


def held_gpus(pods: list[dict[str, Any]]) -> dict[str, int]:
    """GPUs (any extended resource) the non-terminal pods request: what counts in ``used``."""
    held: dict[str, int] = {}
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in _TERMINAL:
            continue
        for c in (pod.get("spec") or {}).get("containers") or []:
            for resource, value in ((c.get("resources") or {}).get("requests") or {}).items():
                if "/" in resource:
                    try:
                        held[resource] = held.get(resource, 0) + int(parse_quantity(str(value)))
                    except ValueError:
                        continue
    return held


@dataclass(frozen=True)
class QuotaSeen:
    """The namespace's GPU quotas and the GPUs this service's pods hold, as read."""

    quotas: list[GpuQuota]
    held: dict[str, int]


def read_quota(
    kube: QuotaReader,
    namespace: str,
    name: str,
    room: Mapping[str, int] | None = None,
    pods: str | None = None,
) -> QuotaSeen | None:
    """The quota figures a bound needs (None: no GPU quota and no exhausted variant, so nothing
    bounds the decision and the pods are not listed). ``pods``: the selector of the service's
    pods (a referenced workload's, from its Scale); its own label selector when None."""
    quotas = gpu_quotas(kube.list_resource_quotas(namespace))
    if not quotas and not room:
        return None
    held = held_gpus(kube.list_pods(namespace, pods or selector_string(name)))
    if quotas:
        # the figures read after the pods: a pod created between the two reads is then in
        # ``used`` and not in ``held`` (room under-counted until the next reconcile), never in
        # ``held`` and not in ``used`` (room counted twice)
        quotas = gpu_quotas(kube.list_resource_quotas(namespace))
    return QuotaSeen(quotas, held)


def bound_seen(
    seen: QuotaSeen | None,
    spec: InferenceServiceSpec,
    plan: Plan,
    replicas: int,
    room: Mapping[str, int] | None = None,
) -> QuotaBound:
    """``replicas`` of ``plan`` within what ``seen`` leaves this service (pure)."""
    if seen is None:
        return QuotaBound(replicas, None, None)
    resource = "" if plan.is_mix else resolve_gpu(spec).resource_name
    return bound_by_quota(plan, replicas, seen.quotas, seen.held, resource, room)


def quota_bound(
    kube: QuotaReader,
    namespace: str,
    name: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    replicas: int,
    room: Mapping[str, int] | None = None,
) -> QuotaBound:
    """``replicas`` of ``plan`` within what the namespace's GPU quotas leave this service (and,
    for a mix, within ``room[variant]``: what an exhausted variant may run)."""
    return bound_seen(read_quota(kube, namespace, name, room), spec, plan, replicas, room)
