"""The fleet's building blocks without a cluster: the watch store, the plan memo, the
client-side token bucket and the 429 back-off (the real API server's 429s are in
tests/integration/test_fleet.py)."""

import copy
import json
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client

from tests.helpers import BASE, deep_merge
from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceService
from tokenscale.controller.plans import PlanMemo
from tokenscale.controller.resync import FleetMetrics, Reconciler, unwatched_input
from tokenscale.controller.settings import Settings
from tokenscale.controller.telemetry import Telemetry
from tokenscale.kube.cached import KINDS, CachedKube
from tokenscale.kube.store import WatchStore, slim
from tokenscale.kube.throttle import BACKOFF_CAP_S, TokenBucket, retry_after_s
from tokenscale.planning import plan_service


def _obj(name: str, version: str, ns: str = "a", **labels: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": ns, "resourceVersion": version, "labels": labels}
    return {"metadata": {**meta, "managedFields": [{"manager": "x"}]}}


def test_store_keeps_the_newer_version_and_drops_managed_fields() -> None:
    store = WatchStore(["Deployment"])
    assert store.put("Deployment", _obj("d", "10"))
    assert not store.put("Deployment", _obj("d", "9"))  # a late event of an older version
    got = store.get("Deployment", "a", "d")
    assert got is not None
    assert got["metadata"]["resourceVersion"] == "10"
    assert "managedFields" not in got["metadata"]
    assert store.put("Deployment", _obj("d", "11"))
    store.drop("Deployment", "a", "d", "10")  # a delete older than what we hold
    assert store.get("Deployment", "a", "d") is not None
    store.drop("Deployment", "a", "d", "12")
    assert store.get("Deployment", "a", "d") is None


@given(st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=30))
def test_store_holds_the_highest_version_whatever_the_order(versions: list[int]) -> None:
    store = WatchStore(["Pod"])
    for v in versions:
        store.put("Pod", _obj("p", str(v)))
    got = store.get("Pod", "a", "p")
    assert got is not None
    assert int(got["metadata"]["resourceVersion"]) == max(versions)


def test_store_selects_by_namespace_and_labels_and_primes_once() -> None:
    store = WatchStore(["Pod"])
    assert not store.primed
    store.prime(
        {
            "Pod": lambda: [
                _obj("p1", "1", app="x", tier="a"),
                _obj("p2", "2", app="x"),
                _obj("p3", "3", "b", app="x"),
            ]
        }
    )
    assert store.wait_primed(0)
    assert sorted(o["metadata"]["name"] for o in store.select("Pod", "a", {"app": "x"})) == [
        "p1",
        "p2",
    ]
    assert [o["metadata"]["name"] for o in store.select("Pod", "a", {"tier": "a"})] == ["p1"]
    assert store.keys("Pod") == [("a", "p1"), ("a", "p2"), ("b", "p3")]


def test_slim_leaves_an_object_without_managed_fields_as_it_was() -> None:
    obj = {"metadata": {"name": "x"}}
    assert slim(obj) == obj


def test_slimmed_objects_share_their_keys_and_short_strings() -> None:
    """Two objects parsed from two answers hold one copy of each key and short value."""

    def parsed() -> dict[str, Any]:
        text = '{"spec": {"template": {"imagePullPolicy": "IfNotPresent", "note": "%s"}}}'
        return dict(json.loads(text % ("x" * 100)))

    a, b = slim(parsed()), slim(parsed())
    assert a == b == parsed()
    key_a = next(k for k in a["spec"]["template"] if k != "note")
    key_b = next(k for k in b["spec"]["template"] if k != "note")
    assert key_a is key_b
    assert a["spec"]["template"]["imagePullPolicy"] is b["spec"]["template"]["imagePullPolicy"]
    assert a["spec"]["template"]["note"] is not b["spec"]["template"]["note"]  # long: its own


def test_a_new_version_reuses_the_cached_parts_it_did_not_change() -> None:
    """A status update's new version holds the cached version's spec, not a second copy."""
    template = {"containers": [{"name": "vllm", "args": ["--max-num-seqs", "256"]}]}
    before = slim({"metadata": {"name": "d"}, "spec": {"template": template}, "status": {}})
    after = slim(
        {"metadata": {"name": "d"}, "spec": copy.deepcopy(before["spec"]), "status": {"a": 1}},
        before,
    )
    assert after["spec"] is before["spec"]
    assert after["status"] == {"a": 1}
    changed = copy.deepcopy(before)
    changed["spec"]["template"]["containers"][0]["args"][1] = "128"
    again = slim(changed, before)
    assert again["spec"]["template"]["containers"][0]["args"][1] == "128"
    assert before["spec"]["template"]["containers"][0]["args"][1] == "256"  # untouched


# one JSON type per value kind: equal as Python compares (1 == 1.0 == True) is what the store
# reuses on, and an API server's schema never changes a field's type between two versions
_JSON = st.recursive(
    st.none() | st.integers(-3, 3) | st.sampled_from("ab"),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xyz"), inner),
    max_leaves=12,
)


@given(st.dictionaries(st.sampled_from(["spec", "status"]), _JSON), _JSON, _JSON)
def test_slim_against_a_cached_version_equals_slim_alone(
    obj: dict[str, Any], meta: Any, old: Any
) -> None:
    obj = {**obj, "metadata": meta if isinstance(meta, dict) else {}}
    like = old if isinstance(old, dict) else {"spec": old}
    new = slim(obj, like)
    assert new == slim(obj)
    assert json.dumps(new, sort_keys=True) == json.dumps(slim(obj), sort_keys=True)  # types too


def _body(**patch: Any) -> dict[str, Any]:
    doc = deep_merge(BASE, patch)
    doc["metadata"] = {"name": "svc", "namespace": "ns", "resourceVersion": "1", "uid": "u"}
    return doc


def _unprofiled(service: InferenceService) -> InferenceService:
    return service


def test_plan_memo_plans_once_per_spec_and_equals_a_fresh_plan() -> None:
    memo = PlanMemo()
    body = _body()
    service, plan = memo.planned(body, _unprofiled)
    fresh = plan_service(service.spec, "svc")
    assert fresh.curve  # `tokenscale plan`'s table: the memo does not keep it
    assert plan == fresh.model_copy(update={"curve": []})
    again = copy.deepcopy(body)
    again["metadata"]["resourceVersion"] = "2"  # status, labels, versions: not the spec
    again["status"] = {"replicas": 3}
    assert memo.planned(again, _unprofiled)[1] is plan
    assert (memo.hits, memo.misses) == (1, 1)
    changed = _body(spec={"workload": {"rps": {"mean": 20}}})
    assert memo.planned(changed, _unprofiled)[1] != plan
    assert memo.misses == 2


def test_plan_memo_remembers_a_bad_spec_and_is_bounded() -> None:
    memo = PlanMemo(size=2)
    bad = _body(spec={"hardware": {"tensorParallelSize": 3}})
    for _ in range(2):
        with pytest.raises(SpecError, match="tensorParallelSize"):
            memo.planned(bad, _unprofiled)
    assert (memo.hits, memo.misses) == (1, 1)
    for rps in (1, 2, 3):
        memo.planned(_body(spec={"workload": {"rps": {"mean": rps}}}), _unprofiled)
    assert len(memo) == 2


def test_plan_memo_reads_a_profile_ref_every_time() -> None:
    memo = PlanMemo()
    calls: list[str] = []

    def profiled(service: InferenceService) -> InferenceService:
        calls.append(service.metadata.name)
        raise SpecError.single("spec.profileRef", "no such ConfigMap")

    body = _body(spec={"profileRef": {"configMapName": "p"}})
    for _ in range(2):
        with pytest.raises(SpecError, match="profileRef"):
            memo.planned(body, profiled)
    assert calls == ["svc", "svc"]
    assert len(memo) == 0


class Clock:
    """A clock that advances only when told (or when the bucket sleeps on it)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_token_bucket_allows_the_burst_then_the_rate() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=5, clock=clock, sleep=clock.sleep)
    waits = [bucket.take() for _ in range(5)]
    assert waits == [0.0] * 5
    start = clock.now
    for _ in range(20):
        bucket.take()
    assert clock.now - start == pytest.approx(2.0)  # 20 more at 10 per second
    clock.now += 100  # idle: the bucket refills to the burst, no further
    assert [bucket.take() for _ in range(5)] == [0.0] * 5
    assert bucket.take() == pytest.approx(0.1)


def test_unlimited_bucket_never_waits() -> None:
    bucket = TokenBucket(qps=0, burst=1)
    assert all(bucket.take() == 0.0 for _ in range(1000))


@pytest.mark.parametrize(
    ("headers", "attempt", "low", "high"),
    [
        ({"Retry-After": "3"}, 0, 3.0, 3.0),
        ({"Retry-After": "3600"}, 0, BACKOFF_CAP_S, BACKOFF_CAP_S),
        ({"Retry-After": "soon"}, 1, 0.8, 1.2),
        ({}, 0, 0.4, 0.6),
        (None, 10, BACKOFF_CAP_S * 0.8, BACKOFF_CAP_S * 1.2),
    ],
)
def test_retry_after_obeys_the_server_else_backs_off(
    headers: dict[str, str] | None, attempt: int, low: float, high: float
) -> None:
    assert low <= retry_after_s(headers, attempt) <= high


# -- plan-only ticks: what is watched, what is re-read within a bound -------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _reconciler(clock: _Clock, bound_s: float = 60.0) -> Any:
    kube = CachedKube(client.ApiClient(), WatchStore(KINDS), ["a"])
    telemetry = Telemetry()
    metrics = FleetMetrics(None, ["a"], 60.0, telemetry, 15.0)
    return Reconciler(kube, metrics, telemetry, unwatched_resync_s=bound_s, clock=clock)


def _service(spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": "s", "namespace": "a", "generation": 1, "resourceVersion": "5"}
    return {"metadata": meta, "spec": spec, "status": {"plan": {}}}


def _quota(gpus: int, used: int, version: str) -> dict[str, Any]:
    figures = {"requests.nvidia.com/gpu": str(gpus)}
    meta = {"name": "q", "namespace": "a", "resourceVersion": version}
    return {
        "metadata": meta,
        "status": {"hard": figures, "used": {"requests.nvidia.com/gpu": str(used)}},
    }


def _reconciled(run: Any, body: dict[str, Any], clock: _Clock) -> None:
    """What ``Reconciler._reconcile`` records after a reconcile that rendered nothing."""
    run.store.put("InferenceService", body)
    seen = run._seen_now(("a", "s"), {}, None, body)
    run._seen[("a", "s")] = seen
    run._reconciled_at[("a", "s")] = clock()


def test_unwatched_inputs_are_named() -> None:
    assert unwatched_input({"model": {"name": "x"}}) is None
    assert unwatched_input({"profileRef": {"configMapName": "b", "key": "k"}}) == "a ConfigMap"
    assert unwatched_input({"model": {"hfConfigRef": {"configMapName": "c"}}}) == "a ConfigMap"
    assert "workloadRef" in str(unwatched_input({"workloadRef": {"name": "w"}}))
    assert "GPU mix" in str(unwatched_input({"hardware": {"variants": []}}))


def test_a_plan_only_tick_rereads_an_unwatched_input_once_per_bound() -> None:
    clock = _Clock()
    run = _reconciler(clock, bound_s=60.0)
    body = _service({"profileRef": {"configMapName": "b", "key": "k"}})
    _reconciled(run, body, clock)
    clock.now = 59.0
    assert run.unchanged(("a", "s"))  # within the bound: nothing to read
    clock.now = 60.0
    assert not run.unchanged(("a", "s"))  # the bound passed: read the ConfigMap again
    plain = _service({"model": {"name": "x"}})
    _reconciled(run, plain, clock)
    clock.now = 10_000.0
    assert run.unchanged(("a", "s"))  # everything it reads is watched: never


def test_a_gpu_quota_change_wakes_the_plan_only_tick() -> None:
    clock = _Clock()
    run = _reconciler(clock)
    run.store.put("ResourceQuota", _quota(8, 2, "7"))
    body = _service({"model": {"name": "x"}})
    _reconciled(run, body, clock)
    assert run.unchanged(("a", "s"))
    run.store.put("ResourceQuota", {**_quota(8, 2, "8"), "spec": {"scopes": []}})
    assert run.unchanged(("a", "s"))  # a new version, the same GPU figures
    run.store.put("ResourceQuota", _quota(8, 6, "9"))  # another service took four GPUs
    assert not run.unchanged(("a", "s"))
    assert run.kube.list_resource_quotas("a")[0]["metadata"]["resourceVersion"] == "9"


def _owned_service(target_port: int, version: str | None = None) -> dict[str, Any]:
    """The rendered Service (no version), or as the cache holds it at ``version``."""
    meta = {"name": "s", "namespace": "a", **({"resourceVersion": version} if version else {})}
    ports = [{"name": "http", "port": 8000, "targetPort": target_port, "protocol": "TCP"}]
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {"ports": ports}}


def test_a_foreign_write_cached_during_a_reconcile_is_judged_by_the_next_tick() -> None:
    """The reconcile wrote version 6; someone else's edit (version 7) reached the cache before
    the reconcile recorded what it saw, by an event it was not woken by (a watch's listing).
    Recording version 7 as seen would make every later tick skip the drift."""
    clock = _Clock()
    run = _reconciler(clock)
    body = _service({"model": {"name": "x"}})
    run.store.put("InferenceService", body)
    rendered = {("Service", "s"): _owned_service(8000)}
    run.store.put("Service", _owned_service(8000, "6"))
    run._seen[("a", "s")] = run._seen_now(("a", "s"), rendered, None, body)
    assert run.unchanged(("a", "s"))  # what it wrote is what it saw
    run.store.put("Service", _owned_service(9999, "7"))
    run._seen[("a", "s")] = run._seen_now(("a", "s"), rendered, None, body)
    assert not run.unchanged(("a", "s"))  # the edit is judged: drift
    run.store.put("Service", _owned_service(8000, "8"))  # put back by that reconcile
    run._seen[("a", "s")] = run._seen_now(("a", "s"), rendered, None, body)
    assert run.unchanged(("a", "s"))


def test_the_unwatched_bound_defaults_to_four_intervals() -> None:
    assert Settings().unwatched_resync_s == 60.0  # the chart's 15 s interval
    assert Settings(interval_seconds=2).unwatched_resync_s == 8.0
    assert Settings(interval_seconds=2, unwatched_resync_seconds=30).unwatched_resync_s == 30.0
    with pytest.raises(ValueError, match="greater than 0"):
        Settings(unwatched_resync_seconds=0)


def test_pods_of_a_referenced_workload_are_asked_of_the_api_not_the_pod_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pod cache holds only pods with the InferenceService label: a referenced workload's
    selector (its Scale's) goes to the API, or its GPUs would read as none held."""
    kube = CachedKube(client.ApiClient(), WatchStore((*KINDS, "Pod")), ["a"])
    kube.store.put("Pod", _obj("ours", "1", **{"tokenscale.io/inferenceservice": "s"}))
    asked: list[str] = []

    def from_api(self: Any, namespace: str, selector: str) -> list[dict[str, Any]]:
        asked.append(selector)
        return [_obj("theirs", "1", app="their-vllm")]

    monkeypatch.setattr("tokenscale.kube.client.Kube.list_pods", from_api)
    assert [p["metadata"]["name"] for p in kube.list_pods("a", "app=their-vllm")] == ["theirs"]
    assert asked == ["app=their-vllm"]
    ours = kube.list_pods("a", "tokenscale.io/inferenceservice=s")
    assert [p["metadata"]["name"] for p in ours] == ["ours"]
    assert asked == ["app=their-vllm"]  # the cache answered


@settings(max_examples=10, deadline=None)
@given(st.lists(st.sampled_from(["a", "svc-2", "x" * 70, "team-b-chat"]), min_size=2, max_size=4))
def test_services_that_differ_in_name_share_one_plan_equal_to_their_own(names: list[str]) -> None:
    memo = PlanMemo()
    for name in names:
        body = _body()
        body["metadata"]["name"] = name
        service, plan = memo.planned(body, _unprofiled)
        fresh = plan_service(service.spec, name)
        assert plan == fresh.model_copy(update={"curve": []})
    assert memo.plans_made == 1


def test_an_owned_event_during_a_reconcile_is_judged_by_it_not_by_a_blocked_worker() -> None:
    """An owned object's event that arrives while its InferenceService's reconcile holds the
    lock is deferred to that reconcile's thread (judged after its writes, before the lock is
    released); with no reconcile in flight it is not deferred, and none is lost in between."""
    run = _reconciler(_Clock())
    run.store._primed.set()
    key = ("a", "s")
    calls: list[tuple[str, str, tuple[str, str] | None]] = []
    started, finish = threading.Event(), threading.Event()

    def locked(k: tuple[str, str], trigger: str, owned: tuple[str, str] | None) -> None:
        calls.append((threading.current_thread().name, trigger, owned))
        if trigger == "create":
            started.set()
            assert finish.wait(10)

    run._locked = locked
    assert not run.defer(key, ("Deployment", "s"))  # nothing in flight: the caller judges it
    worker = threading.Thread(target=run, args=(_service({}), "create"), name="creator")
    worker.start()
    assert started.wait(10)
    assert run.defer(key, ("Deployment", "s"))
    assert run.defer(key, ("Service", "s"))
    assert run.defer(key, ("Deployment", "s"))  # the same object twice: judged once
    assert not run.defer(("a", "other"), ("Deployment", "other"))
    finish.set()
    worker.join(10)
    assert calls == [
        ("creator", "create", None),
        ("creator", "owned", ("Deployment", "s")),
        ("creator", "owned", ("Service", "s")),
    ]
    assert not run._locks[key].locked()
    assert not run.defer(key, ("Deployment", "s"))


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=1, max_value=40))
def test_no_deferred_owned_event_is_lost_to_the_lock_release(events: int) -> None:
    """Events deferred from other threads while reconciles come and go: each one is either
    judged by a reconcile that held the lock, or not deferred (its caller judges it)."""
    run = _reconciler(_Clock())
    run.store._primed.set()
    key = ("a", "s")
    judged: list[tuple[str, str]] = []
    run._locked = lambda k, trigger, owned: judged.append(owned) if owned else None
    left_to_caller = []

    def events_from_the_watch() -> None:
        for i in range(events):
            owned = ("Deployment", f"d{i}")
            if not run.defer(key, owned):
                left_to_caller.append(owned)

    watch = threading.Thread(target=events_from_the_watch)
    watch.start()
    while watch.is_alive():
        run(_service({}), "update")
    watch.join()
    assert sorted(judged + left_to_caller) == sorted(("Deployment", f"d{i}") for i in range(events))


def _labelled(name: str, version: str, ours: bool) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "tokenscale"} if ours else {"team": "x"}
    meta = {"name": name, "namespace": "a", "resourceVersion": version, "labels": labels}
    managers = [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}]
    return {"metadata": {**meta, "managedFields": managers}, "spec": {"replicas": 3}}


def test_a_name_is_free_only_once_the_stream_reached_the_owner_and_nobody_holds_it() -> None:
    kube = CachedKube(client.ApiClient(), WatchStore(KINDS), ["a"])
    store = kube.store
    assert not store.free("Deployment", "a", "new", "10")  # nothing heard yet: ask
    kube.watched("Deployment", _labelled("other", "12", ours=True), False, listing=True)
    assert not store.free("Deployment", "a", "new", "10")  # a listing's order proves nothing
    kube.watched("Deployment", _labelled("other", "12", ours=True), False, listing=False)
    assert store.free("Deployment", "a", "new", "10")
    assert store.free("Deployment", "a", "new", "12")
    assert not store.free("Deployment", "a", "new", "13")  # written after what was heard
    assert not store.free("Service", "a", "new", "10")  # each kind's stream on its own
    assert not store.free("Deployment", "b", "new", "10")  # and each namespace's
    kube.watched("Deployment", _labelled("theirs", "14", ours=False), False, listing=False)
    assert not store.free("Deployment", "a", "theirs", "10")  # held by someone else
    assert store.get("Deployment", "a", "theirs") is None  # not ours: only a stub
    stub = store.foreign("Deployment", "a", "theirs")
    assert stub is not None
    assert "spec" not in stub
    assert stub["metadata"]["labels"] == {"team": "x"}
    assert stub["metadata"]["managedFields"] == [{"manager": "kubectl", "operation": "Update"}]
    assert not store.free("Deployment", "a", "other", "10")  # ours: cached whole
    kube.watched("Deployment", _labelled("theirs", "15", ours=False), True, listing=False)
    assert store.free("Deployment", "a", "theirs", "15")  # deleted: free again
    assert not store.free("Deployment", "a", "new", "not-a-number")


def test_a_free_name_costs_no_get_and_an_unknown_one_asks_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kube = CachedKube(client.ApiClient(), WatchStore(KINDS), ["a"])
    asked: list[str] = []

    def raw(method: str, path: str, *_: Any, **__: Any) -> dict[str, Any]:
        asked.append(path)
        raise client.exceptions.ApiException(status=404)

    monkeypatch.setattr(kube, "_raw", raw)
    kube.watched("Deployment", _labelled("other", "20", ours=True), False, listing=False)
    with kube.owner("19"):
        assert kube.read_deployment("a", "new") is None
    assert asked == []
    with kube.owner("21"):  # written after the stream's last event: ask the API server
        assert kube.read_deployment("a", "new") is None
    assert kube.read_deployment("a", "new") is None  # no owner known: ask
    assert len(asked) == 2
    kube.watched("Deployment", _labelled("theirs", "22", ours=False), False, listing=False)
    with kube.owner("19"):
        kube.read_deployment("a", "theirs")  # someone else's: confirmed by the API server
    assert len(asked) == 3


def test_an_object_that_loses_our_label_becomes_a_stub() -> None:
    kube = CachedKube(client.ApiClient(), WatchStore(KINDS), ["a"])
    kube.watched("Service", _labelled("s", "5", ours=True), False, listing=False)
    assert kube.store.get("Service", "a", "s") is not None
    kube.watched("Service", _labelled("s", "6", ours=False), False, listing=False)
    assert kube.store.get("Service", "a", "s") is None
    assert kube.store.foreign("Service", "a", "s") is not None
    kube.watched("Service", _labelled("s", "7", ours=True), False, listing=False)
    assert kube.store.foreign("Service", "a", "s") is None


def test_an_event_for_the_version_a_running_reconcile_read_does_not_wait_for_it() -> None:
    """A tick that reached a new service before its create handler reconciles version 5; the
    create event for version 5 returns at once (that work is under way) instead of holding a
    worker thread on the lock; an event for a newer version still waits and reconciles."""
    run = _reconciler(_Clock())
    run.store._primed.set()
    key = ("a", "s")
    calls: list[tuple[str, str]] = []
    started, finish = threading.Event(), threading.Event()

    def locked(k: tuple[str, str], trigger: str, owned: tuple[str, str] | None) -> None:
        calls.append((threading.current_thread().name, trigger))
        if trigger == "tick":
            with run._guard:
                run._reading[k] = "5"
            started.set()
            assert finish.wait(10)
            with run._guard:
                run._reading.pop(k, None)

    run._locked = locked
    ticker = threading.Thread(target=run, args=(_service({}), "tick"), name="ticker")
    ticker.start()
    assert started.wait(10)
    assert run.covered(key, "5")
    assert not run.covered(key, "6")
    run(_service({}), "create")  # version 5: returns without the lock
    newer = _service({})
    newer["metadata"]["resourceVersion"] = "6"
    updater = threading.Thread(target=run, args=(newer, "update"), name="updater")
    updater.start()
    updater.join(0.2)
    assert updater.is_alive()  # version 6 waits for the running reconcile
    finish.set()
    ticker.join(10)
    updater.join(10)
    assert calls == [("ticker", "tick"), ("updater", "update")]
    assert not run.covered(key, "5")
