"""``desire()`` is a pure function of one observation; the reconcile is observe → desire → act.

The observation is read by ``observe`` from the in-memory API stand-in of
test_status_transitions (the same reads the real API server serves in tests/integration).
"""

import copy
import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_status_transitions import FakeKube, _body, _metrics
from tokenscale.controller.desire import Desire, desire, settled_status
from tokenscale.controller.observation import Observation
from tokenscale.controller.reconcile import observe, reconcile
from tokenscale.controller.status import status_document
from tokenscale.controller.status_news import news
from tokenscale.controller.workload import observe_workload
from tokenscale.scaling import Snapshot

NOW = "2026-01-01T00:00:00Z"

snapshots = st.builds(
    lambda running, waiting, kv, ttft: Snapshot(
        at=0.0,
        replicas_reporting=1,
        running=running,
        waiting=waiting,
        kv_usage_max=kv,
        ttft_p99_s=ttft,
    ),
    st.integers(0, 400),
    st.integers(0, 200),
    st.floats(0.0, 1.0),
    st.floats(0.05, 5.0),
)


def _events() -> tuple[list[tuple[str, str, str]], Any]:
    seen: list[tuple[str, str, str]] = []
    return seen, lambda *e: seen.append(e)


def _observed(kube: FakeKube, snapshot: Snapshot, live: int) -> Observation:
    """A service reconciled once, its Deployment then scaled to ``live`` by someone else,
    observed on a new metrics read."""
    kube.run(_metrics(snapshot))
    kube.objects["Deployment"]["spec"]["replicas"] = live
    writes, objects = kube.status_writes, copy.deepcopy(kube.objects)
    events, emit = _events()
    seen = observe(kube, kube.body, NOW, emit, _metrics(snapshot))
    assert isinstance(seen, Observation)
    # observing writes nothing and says nothing
    assert (kube.status_writes, kube.objects, events) == (writes, objects, [])
    return seen


def _what(d: Desire) -> tuple[Any, ...]:
    return (d.decision, d.objects, d.events, d.scale_to, d.drop_scaled_object)


@settings(max_examples=25, deadline=None)
@given(snapshot=snapshots, live=st.integers(0, 12))
def test_desire_is_deterministic_and_leaves_the_observation_as_it_was(
    snapshot: Snapshot, live: int
) -> None:
    seen = _observed(FakeKube(_body()), snapshot, live)
    before = copy.deepcopy(seen)
    first, second = desire(seen), desire(seen)
    assert _what(first) == _what(second)
    assert seen == before
    assert _what(desire(before)) == _what(first)  # a copy of the observation: the same desire


@settings(max_examples=15, deadline=None)
@given(snapshot=snapshots, live=st.integers(0, 12), minutes=st.integers(1, 59))
def test_the_clock_of_the_conditions_changes_no_object_and_no_decision(
    snapshot: Snapshot, live: int, minutes: int
) -> None:
    """``Observation.now`` stamps conditions and the last scale time only."""
    seen = _observed(FakeKube(_body()), snapshot, live)
    later = dataclasses.replace(seen, now=f"2026-01-01T00:{minutes:02d}:00Z")
    assert _what(desire(later)) == _what(desire(seen))


@settings(max_examples=15, deadline=None)
@given(snapshot=snapshots, live=st.integers(0, 12))
def test_reconcile_writes_the_status_desire_settles_on(snapshot: Snapshot, live: int) -> None:
    """The status reconcile writes (or holds back: nothing a reader acts on changed) is
    ``settled_status`` of the observation it read, the desire, and the Deployment as the apply
    left it."""
    kube = FakeKube(_body())
    seen = _observed(kube, snapshot, live)
    wanted = desire(seen)
    assert seen.metrics is not None
    stored = copy.deepcopy(kube.body["status"])
    outcome = reconcile(kube, kube.body, NOW, _events()[1], seen.metrics)
    after = observe_workload({**kube.objects["Deployment"], "kind": "Deployment"})
    expected = status_document(settled_status(seen, wanted, after, {}))
    if outcome.held_status is None:
        assert kube.body["status"] == expected
    else:
        assert (outcome.held_status, kube.body["status"]) == (expected, stored)
        assert news(stored, expected) is None
    # and what it applied is what desire said: the rendered Deployment, replicas included
    rendered = next(o for o in wanted.objects if o["kind"] == "Deployment")
    assert kube.objects["Deployment"]["spec"]["replicas"] == rendered["spec"]["replicas"]


def test_advisory_desires_no_object_and_recommends_once() -> None:
    kube = FakeKube(_body(scaling={"actuation": "advisory"}))
    first = observe(kube, kube.body, NOW, _events()[1], None)
    assert isinstance(first, Observation)
    wanted = desire(first)
    assert (wanted.objects, wanted.scale_to, wanted.actuator.mode) == ([], None, "advisory")
    n = wanted.decision.replicas
    assert [e[:2] for e in wanted.events] == [("Normal", "Recommended")]
    assert wanted.events[0][2].startswith(f"Recommended {n}: ")
    kube.run(None)
    assert "Deployment" not in kube.objects
    again = observe(kube, kube.body, NOW, _events()[1], None)
    assert isinstance(again, Observation)
    assert desire(again).events == []  # the same recommendation is not repeated


def test_a_scaled_object_takes_the_open_windows_bounds_down_to_zero() -> None:
    """keda mode: the ScaledObject's min/max are the bounds in force; a window with
    ``minReplicas: 0`` lets KEDA take the workload to zero while it is open (plan-only)."""
    keda = {"serverAddress": "http://prometheus:9090"}
    always = {"cron": "* * * * *", "durationSeconds": 3600}
    for window, want in (
        ({**always, "minReplicas": 6, "maxReplicas": 8}, (6, 8)),
        ({**always, "minReplicas": 0}, (0, 4)),
        ({"cron": "0 0 1 1 *", "durationSeconds": 60, "minReplicas": 6, "maxReplicas": 8}, (1, 4)),
    ):
        scaling = {
            "actuation": "keda",
            "keda": keda,
            "minReplicas": 1,
            "maxReplicas": 4,
            "schedule": [window],
            "activation": {"query": "sum(queued)"},
        }
        kube = FakeKube(_body(scaling=scaling))
        seen = observe(kube, kube.body, "2026-03-04T12:34:56Z", _events()[1], None)
        assert isinstance(seen, Observation)
        d = desire(seen)
        so = next(o for o in d.objects if o["kind"] == "ScaledObject")
        got = (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"])
        assert got == want, window
        assert ("cooldownPeriod" in so["spec"]) == (want[0] == 0)
        lo, hi = want
        assert lo <= d.decision.replicas <= hi
