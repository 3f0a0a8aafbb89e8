"""The status is one typed model, replaced whole: each transition adds and removes parts.

The reconcile runs against an in-memory stand-in for the API (only the calls it makes);
the real API server path is covered by tests/integration.
"""

import copy
from typing import Any

import pytest

from tests.helpers import manifest
from tokenscale.api.status import InferenceServiceStatus
from tokenscale.controller.reconcile import MetricsView, reconcile
from tokenscale.kube.scale import Resource
from tokenscale.scaling import Snapshot

NOW_S = 1_800_000_000.0


class FakeKube:
    """The reconcile's API calls over dicts; ``replace_status`` stores exactly what it gets."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.objects: dict[str, dict[str, Any]] = {}
        self.status_writes = 0
        self.events: list[tuple[str, str, str]] = []
        self.quotas: list[dict[str, Any]] = []

    def read_deployment(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.objects.get("Deployment")

    def read_service(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.objects.get("Service")

    def read_pdb(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.objects.get("PodDisruptionBudget")

    def read_leader_worker_set(self, ns: str, name: str) -> dict[str, Any] | None:
        return self.objects.get("LeaderWorkerSet")

    def read_own_workload(self, kind: str, ns: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(kind)

    def read_config_map(self, ns: str, name: str) -> None:
        return None

    def list_pods(self, ns: str, selector: str) -> list[dict[str, Any]]:
        return []  # no pod has started: the engine uses its default lead time

    def list_resource_quotas(self, ns: str) -> list[dict[str, Any]]:
        return self.quotas

    def delete_deployment(self, ns: str, name: str) -> None:
        self.objects.pop("Deployment", None)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.objects[obj["kind"]] = copy.deepcopy(obj)
        return obj

    def delete_leader_worker_set(self, ns: str, name: str) -> None:
        self.objects.pop("LeaderWorkerSet", None)

    def read_scaled_object(self, ns: str, name: str) -> None:
        return None  # no KEDA ScaledObject exists in this stand-in

    def read_inference_pool(self, ns: str, name: str) -> None:
        return None  # nor an InferencePool

    def read_inference_objective(self, ns: str, name: str) -> None:
        return None  # nor an InferenceObjective

    def read_inference_service(self, ns: str, name: str) -> None:
        return None

    def list_length_children(self, ns: str, parent: str) -> list[dict[str, Any]]:
        return []

    def delete_inference_service(self, ns: str, name: str) -> None:
        raise AssertionError("no length classes here")

    def list_inference_objectives(self, ns: str, selector: str) -> list[dict[str, Any]]:
        return []

    def delete_inference_objective(self, ns: str, name: str) -> None:
        raise AssertionError("no class, no objective to delete")

    # the paths below (KEDA, workloadRef, least-busy pods first) need objects this stand-in
    # never holds: a call is a test that took a path it did not mean to
    def delete_scaled_object(self, ns: str, name: str) -> None:
        raise AssertionError("no ScaledObject to delete in this stand-in")

    def hand_over_replicas(self, workload: dict[str, Any], replicas: int) -> dict[str, Any]:
        raise AssertionError("the KEDA hand-over is not on this stand-in's paths")

    def annotate_pod(self, ns: str, name: str, annotations: dict[str, str]) -> None:
        raise AssertionError("this stand-in lists no pods to annotate")

    def scalable(self, api_version: str, kind: str) -> Resource | None:
        raise AssertionError("spec.workloadRef is not on this stand-in's paths")

    def read_object(self, where: Resource, ns: str, name: str) -> dict[str, Any] | None:
        raise AssertionError("spec.workloadRef is not on this stand-in's paths")

    def read_scale(self, where: Resource, ns: str, name: str) -> dict[str, Any] | None:
        raise AssertionError("spec.workloadRef is not on this stand-in's paths")

    def write_replicas(self, where: Resource, ns: str, name: str, n: int) -> None:
        raise AssertionError("spec.workloadRef is not on this stand-in's paths")

    def replace_status(
        self, ns: str, name: str, status: dict[str, Any], resource_version: str | None = None
    ) -> dict[str, Any]:
        InferenceServiceStatus.model_validate(status)  # the typed model, whole
        self.body["status"] = copy.deepcopy(status)
        self.status_writes += 1
        return self.body

    def run(self, metrics: MetricsView | None, now: str = "2026-01-01T00:00:00Z") -> None:
        def emit(type_: str, reason: str, message: str) -> None:
            self.events.append((type_, reason, message))

        reconcile(self, self.body, now, emit, metrics)


def _body(**spec: Any) -> dict[str, Any]:
    body = manifest(**spec)
    body["metadata"].update(namespace="ns", uid="u-1", generation=1, resourceVersion="1")
    return body


READS = [NOW_S]


def _metrics(
    snapshot: Snapshot | None, error: str | None = None, read_at: float | None = None
) -> MetricsView:
    """A fleet read: a new one 15 s after the last unless ``read_at`` names an earlier one."""
    if read_at is None:
        READS.append(READS[-1] + 15.0)
        read_at = READS[-1]
    if snapshot is not None:
        snapshot = snapshot.model_copy(update={"at": read_at})
    return MetricsView(
        snapshot=snapshot,
        source_error=error,
        now_s=read_at + 0.5,
        interval_s=15.0,
        read_at_s=read_at,
    )


SNAP = Snapshot(
    at=NOW_S, replicas_reporting=1, waiting=0, running=3, kv_usage_max=0.3, ttft_p99_s=0.84
)


def _condition(body: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next(c for c in body["status"]["conditions"] if c["type"] == ctype)


def test_live_appears_with_metrics_and_leaves_in_an_outage() -> None:
    kube = FakeKube(_body())
    kube.run(_metrics(SNAP))
    status = kube.body["status"]
    assert status["live"]["ttftP99Seconds"] == 0.84
    assert status["ttftP99"] == "840ms live"
    assert status["decision"]["source"] in {"metrics", "plan"}
    assert _condition(kube.body, "MetricsAvailable")["status"] == "True"

    kube.run(_metrics(None, "Prometheus unreachable"))
    status = kube.body["status"]
    assert "live" not in status  # not a stale snapshot shown as current
    assert status["ttftP99"].endswith(" estimate")
    assert status["decision"]["source"] == "hold"
    assert "scaling" in status  # the engine's memory stays
    assert _condition(kube.body, "MetricsAvailable")["status"] == "False"


def test_an_infeasible_spec_drops_the_decision_and_keeps_the_memory() -> None:
    kube = FakeKube(_body())
    kube.run(_metrics(SNAP))
    decided = kube.body["status"]["decidedReplicas"]
    kube.body["spec"]["model"] = {"name": "meta-llama/Llama-3.1-405B", "catalog": "llama-3.1-405b"}
    kube.body["spec"]["hardware"] = {"gpu": "L4-24GB", "tensorParallelSize": "auto"}
    kube.run(_metrics(SNAP))
    status = kube.body["status"]
    for gone in ("decision", "live", "diagnosis", "tensorParallelSize", "availableReplicas"):
        assert not status.get(gone), gone
    assert status["decidedReplicas"] == decided
    assert "scaling" in status
    assert _condition(kube.body, "PlanFeasible")["status"] == "False"
    # a layout that cannot serve has no counts, so no plan summary and no estimate to show
    assert "plan" not in status
    assert "ttftP99" not in status

    kube.body["spec"] = manifest()["spec"]  # fixed: the decision comes back
    kube.run(_metrics(SNAP))
    assert kube.body["status"]["decision"]
    assert _condition(kube.body, "PlanFeasible")["status"] == "True"


def test_an_invalid_spec_has_no_plan() -> None:
    kube = FakeKube(_body(hardware={"gpu": "H100-SXM-80GB", "tensorParallelSize": 8}))
    kube.body["spec"]["model"] = {"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": "qwen2.5-7b"}
    kube.run(None)
    status = kube.body["status"]
    assert "plan" not in status
    assert "ttftP99" not in status
    assert _condition(kube.body, "PlanFeasible")["reason"] == "InvalidSpec"


def test_nothing_changed_writes_nothing() -> None:
    kube = FakeKube(_body())
    kube.run(None)
    kube.run(None)
    kube.run(None, now="2026-01-01T00:05:00Z")
    assert kube.status_writes == 1


def test_numbers_people_read_are_rounded() -> None:
    kube = FakeKube(_body(cost={"gpuHourPrice": 4.6}, scaling={"replicas": 4}))
    kube.run(None)
    plan = kube.body["status"]["plan"]
    assert plan["costPerHour"] == pytest.approx(18.4)
    assert len(repr(plan["costPerHour"])) <= 8  # not 18.400000000000002
    assert kube.body["status"]["ttftP99"].endswith(("ms estimate", "s estimate"))


def test_reconciles_between_two_reads_apply_the_stored_decision() -> None:
    """An owned Deployment's events between two metric reads: no re-decision."""
    kube = FakeKube(_body())
    busy = SNAP.model_copy(update={"kv_usage_max": 0.95, "running": 40.0})
    read = _metrics(busy)
    kube.run(read)
    first = copy.deepcopy(kube.body["status"])
    assert first["decision"]["observedAt"].endswith("Z")
    assert first["scaling"]["observedAtSeconds"] == read.read_at_s
    events_before = len(kube.events)
    for k in range(5):  # the same read, later clocks: events, retries, an update
        again = MetricsView(
            snapshot=read.snapshot,
            source_error=None,
            now_s=read.now_s + 1.0 + k,
            interval_s=15.0,
            read_at_s=read.read_at_s,
        )
        kube.run(again)
        assert kube.body["status"]["decision"] == first["decision"]
        assert kube.body["status"]["scaling"] == first["scaling"]
        assert kube.body["status"]["decidedReplicas"] == first["decidedReplicas"]
    assert not [e for e in kube.events[events_before:] if e[1] == "Scaled"]
    kube.run(_metrics(busy))  # the next read decides again
    assert kube.body["status"]["decision"]["observedAt"] != first["decision"]["observedAt"]


def _poison(kube: FakeKube, **status: Any) -> None:
    kube.body["status"] = {**kube.body["status"], **status}


def test_an_edited_decided_replicas_moves_the_workload_at_most_one_step() -> None:
    kube = FakeKube(_body(scaling={"minReplicas": 1, "maxReplicas": 64}))
    kube.run(_metrics(SNAP))
    start = kube.objects["Deployment"]["spec"]["replicas"]
    _poison(kube, decidedReplicas=40)
    kube.run(_metrics(SNAP))
    after = kube.objects["Deployment"]["spec"]["replicas"]
    assert after <= start + 4  # maxScaleUpStep: never 40 in one write
    scaled = [e for e in kube.events if e[1] == "Scaled"]
    for _, _, message in scaled:  # events say what really happened to the Deployment
        assert message.startswith(f"Scaled {start}→{after}")


def test_an_edited_low_decided_replicas_steps_down_no_faster_than_the_policy() -> None:
    kube = FakeKube(_body(scaling={"minReplicas": 1, "maxReplicas": 64}))
    kube.run(_metrics(SNAP))
    kube.objects["Deployment"]["spec"]["replicas"] = 12  # a fleet at 12
    _poison(kube, decidedReplicas=12)
    kube.run(_metrics(SNAP))
    _poison(
        kube, decidedReplicas=1, scaling={**kube.body["status"]["scaling"], "lowSinceSeconds": 0.0}
    )
    kube.run(_metrics(SNAP))
    assert kube.objects["Deployment"]["spec"]["replicas"] >= 12 - 1  # maxScaleDownStep 1


def test_an_absurd_remembered_rate_never_crashes_the_status_write() -> None:
    kube = FakeKube(_body())
    kube.run(_metrics(SNAP))
    scaling = dict(kube.body["status"]["scaling"])
    scaling["rate"] = {"levelRps": 1e300, "trendRpsPerSecond": 1e300, "atSeconds": READS[-1]}
    scaling["calibration"] = 1e300
    _poison(kube, scaling=scaling)
    kube.run(_metrics(SNAP))  # FakeKube.replace_status validates the whole typed status
    kept = kube.body["status"]["scaling"]
    assert kept.get("rate", {}).get("levelRps", 0.0) < 1e6  # reset (SNAP has no rate)
    assert 0.5 <= kept["calibration"] <= 1.5


def test_a_status_part_that_does_not_validate_is_dropped_not_fatal() -> None:
    kube = FakeKube(_body())
    kube.run(_metrics(SNAP))
    _poison(kube, scaling={"rateLevelRps": 3.0, "nonsense": True})  # an old or foreign shape
    kube.run(_metrics(SNAP))
    assert kube.body["status"]["decision"]["source"] == "metrics"
    assert "nonsense" not in kube.body["status"]["scaling"]


def test_a_scaled_event_names_the_workloads_count_before_and_the_cause_numbers() -> None:
    kube = FakeKube(_body(scaling={"minReplicas": 1, "maxReplicas": 20}))
    kube.run(_metrics(SNAP))
    before = kube.objects["Deployment"]["spec"]["replicas"]
    busy = SNAP.model_copy(update={"kv_usage_max": 0.97, "running": 40.0})
    kube.run(_metrics(busy))
    after = kube.objects["Deployment"]["spec"]["replicas"]
    assert after > before
    scaled = [m for _, reason, m in kube.events if reason == "Scaled"]
    assert scaled == [f"Scaled {before}→{after}: kv_usage 0.97 ≥ 0.9 on 1 reporting"]
    assert kube.body["status"]["decision"]["cause"] == "Pressure"


def test_a_gpu_quota_caps_the_workload_and_says_by_how_much() -> None:
    kube = FakeKube(_body(workload={"rps": {"mean": 40}}))
    kube.quotas = [
        {
            "metadata": {"name": "team-gpus"},
            "spec": {"hard": {"requests.nvidia.com/gpu": "2"}},
            "status": {
                "hard": {"requests.nvidia.com/gpu": "2", "requests.cpu": "64"},
                "used": {"requests.nvidia.com/gpu": "0"},
            },
        }
    ]
    kube.run(None)
    planned = kube.body["status"]["decidedReplicas"]
    assert planned > 2
    assert kube.objects["Deployment"]["spec"]["replicas"] == 2
    feasible = _condition(kube.body, "PlanFeasible")
    assert feasible["status"] == "False"
    assert feasible["reason"] == "QuotaLimited"
    assert (
        f"{planned} nvidia.com/gpu wanted, 2 allowed ({planned - 2} short)" in feasible["message"]
    )
    assert "team-gpus" in feasible["message"]
