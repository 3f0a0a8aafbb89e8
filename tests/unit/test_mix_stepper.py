"""The mix stepper (``scaling/mix_stepper.py``): the shared stepper's total, split over the
variants within their room, with the stockout rule — never beyond a variant's ``maxReplicas``
or an exhausted variant's placed count, an exhausted variant given nothing new until its retry,
down the dearest first and up the cheapest first from the plan's mix."""

from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import ROOT
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.manifest import parse_manifests
from tokenscale.controller.quota import QuotaSeen, bound_seen
from tokenscale.planning import Plan, plan_service
from tokenscale.scaling import Snapshot
from tokenscale.scaling.mix_stepper import MixState, MixStepper
from tokenscale.scaling.quota import GpuQuota
from tokenscale.scaling.state import ScalingState
from tokenscale.scaling.stepper import Observation, Stepper
from tokenscale.scaling.stockout import (
    STOCKOUT_GRACE_S,
    STOCKOUT_RETRY_S,
    Exhausted,
    VariantPod,
    room_of,
)

MIXED = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
H100, L40S = "h100-sxm-80gb", "l40s-48gb"


def _mixed(load_aware: bool, h100_max: int = 4) -> tuple[InferenceServiceSpec, Plan]:
    doc: dict[str, Any] = yaml.safe_load(MIXED.read_text())
    doc["spec"]["hardware"]["variants"][0]["maxReplicas"] = h100_max
    doc["spec"]["scaling"]["minReplicas"] = 1
    if load_aware:
        doc["spec"]["gateway"] = {"inferencePool": {"name": "pool"}}
    spec = parse_manifests(yaml.safe_dump(doc))[0].spec
    return spec, plan_service(spec, "mixed")


PLANS = {aware: _mixed(aware) for aware in (True, False)}


def _stepper(load_aware: bool) -> MixStepper:
    spec, plan = PLANS[load_aware]
    return MixStepper(Stepper(spec, plan, 15.0))


def _snap(at: float, rps: float, n: int, waiting: float, kv: float) -> Snapshot:
    return Snapshot(
        at=at,
        replicas_reporting=max(n, 1),
        waiting=waiting,
        running=10.0 * max(n, 1),
        kv_usage_max=kv,
        kv_usage_mean=kv,
        ttft_p99_s=0.5,
        tpot_p99_s=0.03,
        request_rate_rps=rps,
        prompt_tps=800.0 * rps,
        generation_tps=200.0 * rps,
        newest_sample_age_s=1.0,
    )


def _cost_per_rps(plan: Plan) -> dict[str, float]:
    """The scale order, computed here from the plan's figures: price × GPUs ÷ capacity (every
    replica at the slowest used one's behind a plain Service)."""
    slowest = min(v.capacity_rps_per_replica for v in plan.variants if v.replicas > 0)
    rr = plan.mix is not None and plan.mix.routing == "round-robin"
    return {
        v.name: (v.gpu_hour_price or 1.0)
        * v.gpus_per_replica
        / (min(v.capacity_rps_per_replica, slowest) if rr else v.capacity_rps_per_replica)
        for v in plan.variants
    }


@dataclass
class _Pod:
    variant: str
    pending_since: float | None


class _Pods:
    """The variants' pods as a ReplicaSet keeps them: a count's new pods are placed, or
    pending (unschedulable since their creation) while their variant is stocked out; a lower
    count removes pending pods first (newest first), then placed ones."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.pods = [_Pod(v, None) for v, n in counts.items() for _ in range(n)]

    def observed(self) -> list[VariantPod]:
        return [VariantPod(p.variant, p.pending_since) for p in self.pods]

    def placed(self, variant: str) -> int:
        return sum(1 for p in self.pods if p.variant == variant and p.pending_since is None)

    def apply(self, counts: dict[str, int], now: float, out_of_stock: set[str]) -> None:
        for variant, want in counts.items():
            mine = [p for p in self.pods if p.variant == variant]
            for _ in range(want - len(mine)):
                self.pods.append(_Pod(variant, now if variant in out_of_stock else None))
            drop = len(mine) - want
            pending = [p for p in reversed(mine) if p.pending_since is not None]
            placed = [p for p in reversed(mine) if p.pending_since is None]
            for p in (pending + placed)[: max(0, drop)]:
                self.pods.remove(p)


OBS = st.tuples(
    st.floats(0.5, 200.0),  # arrival RPS
    st.floats(0.0, 40.0),  # waiting
    st.floats(0.0, 1.0),  # KV usage
    st.sampled_from([15.0, 60.0, 400.0, 1000.0]),  # seconds to the next observation
    st.booleans(),  # the H100 is out of stock from here
)


@settings(max_examples=40, deadline=None)
@given(load_aware=st.booleans(), observations=st.lists(OBS, min_size=1, max_size=12))
def test_the_split_stays_within_every_variants_room(
    load_aware: bool, observations: list[tuple[float, float, float, float, bool]]
) -> None:
    """Over any run of observations and stockouts: never beyond a variant's maxReplicas, an
    exhausted variant never beyond what it has placed, the split never beyond the total, and
    a mark is kept until its retry."""
    stepper = _stepper(load_aware)
    plan = stepper.plan
    bound = {v.name: v.max_replicas for v in plan.variants}
    state: MixState = stepper.initial()
    pods = _Pods({v.name: v.replicas for v in plan.variants})
    now = 0.0
    out: set[str] = set()
    for rps, waiting, kv, dt, stockout in observations:
        now += dt
        out = {H100} if stockout else out
        n = sum(pods.placed(v.name) for v in plan.variants)
        before = state.marks
        step = stepper.step(
            state, Observation(now, _snap(now, rps, n, waiting, kv)), pods.observed(), now
        )
        counts = step.counts
        assert set(counts) == set(bound)
        assert all(0 <= counts[v] <= bound[v] for v in bound)
        assert sum(counts.values()) == step.bound.replicas <= step.total
        for variant, mark in step.state.marks.items():
            assert counts[variant] <= mark.placed == pods.placed(variant)
        for variant, mark in before.items():  # a mark is kept until its retry
            if now - mark.since_s < STOCKOUT_RETRY_S:
                assert step.state.marks[variant].since_s == mark.since_s
        state = step.state
        pods.apply(counts, now, out)


@settings(max_examples=60, deadline=None)
@given(load_aware=st.booleans(), total=st.integers(0, 40))
def test_down_the_dearest_first_and_up_the_cheapest_first_from_the_plans_mix(
    load_aware: bool, total: int
) -> None:
    """A total below the plan's takes replicas from the dearest capacity first; above it, adds
    them to the cheapest that has room first (relative to the plan's mix, as the operator's
    split runs)."""
    stepper = _stepper(load_aware)
    plan = stepper.plan
    planned = {v.name: v.replicas for v in plan.variants}
    bound = {v.name: v.max_replicas for v in plan.variants}
    cost = _cost_per_rps(plan)
    pinned = stepper.stepper.spec.model_copy(
        update={
            "scaling": stepper.stepper.spec.scaling.model_copy(
                update={"replicas": total, "max_replicas": 40, "min_replicas": 0}
            )
        }
    )
    pin = MixStepper(Stepper(pinned, plan, 15.0))
    counts = pin.step(pin.initial(), None, [], 0.0).counts
    assert sum(counts.values()) == min(total, sum(bound.values()))
    for v, n in planned.items():
        if counts[v] < n:  # v lost replicas: every dearer variant lost all of its own
            assert all(counts[w] == 0 for w in planned if cost[w] > cost[v])
        if counts[v] > n:  # v gained: every cheaper variant is at its bound
            assert all(counts[w] == bound[w] for w in planned if cost[w] < cost[v])


def test_an_exhausted_variant_gets_nothing_new_until_its_retry_then_is_asked_again() -> None:
    stepper = _stepper(True)
    plan = stepper.plan
    assert {v.name: v.replicas for v in plan.variants} == {H100: 4, L40S: 7}
    state = stepper.initial()
    t0 = 10_000.0
    # 1 H100 placed, 3 unschedulable since t0; all L40S placed
    pods = [VariantPod(H100, None)] + [VariantPod(H100, t0, "0/5 nodes")] * 3
    pods += [VariantPod(L40S, None)] * 7
    hot = 150.0  # the 11 replicas' load and more
    within = stepper.step(
        state, Observation(t0 + 60, _snap(t0 + 60, hot, 7, 30, 0.9)), pods, t0 + 60
    )
    assert within.state.marks == {}  # within the grace: nothing marked, the H100s still asked
    assert within.counts[H100] == 4
    at = t0 + STOCKOUT_GRACE_S + 1
    marked = stepper.step(within.state, Observation(at, _snap(at, hot, 7, 30, 0.9)), pods, at)
    assert set(marked.state.marks) == {H100}
    assert marked.counts[H100] == 1  # keeps what it placed
    assert marked.counts[L40S] > 7  # the need moved to the next variant
    # the pending pods go with the count; within the retry the mark holds
    placed = [VariantPod(H100, None)] + [VariantPod(L40S, None)] * marked.counts[L40S]
    later = at + STOCKOUT_RETRY_S - 60
    held = stepper.step(
        marked.state, Observation(later, _snap(later, hot, 9, 30, 0.9)), placed, later
    )
    assert held.counts[H100] == 1
    assert set(held.state.marks) == {H100}
    retry = at + STOCKOUT_RETRY_S + 15
    again = stepper.step(
        held.state, Observation(retry, _snap(retry, hot, 9, 30, 0.9)), placed, retry
    )
    assert again.state.marks == {}
    assert again.counts[H100] == 4  # tried again: the cheapest capacity first


def test_the_mix_stepper_refuses_a_one_gpu_plan() -> None:
    doc: dict[str, Any] = yaml.safe_load(MIXED.read_text())
    v = doc["spec"]["hardware"].pop("variants")[0]
    doc["spec"]["hardware"] = {"gpu": v["gpu"], "tensorParallelSize": 1}
    spec = parse_manifests(yaml.safe_dump(doc))[0].spec
    stepper = MixStepper(Stepper(spec, plan_service(spec, "one"), 15.0))
    with pytest.raises(ValueError, match="mix plan"):
        stepper.step(stepper.initial(), None, [], 0.0)


@settings(max_examples=60, deadline=None)
@given(
    total=st.integers(0, 30),
    h100_placed=st.integers(0, 4),
    quota_gpus=st.one_of(st.none(), st.integers(0, 30)),
)
def test_the_split_is_the_one_the_reconcile_writes(
    total: int, h100_placed: int, quota_gpus: int | None
) -> None:
    """For the same total, exhausted marks and GPU quota, the mix stepper's split is the
    reconcile's (``controller/quota.bound_seen`` with ``room_of`` of its marks)."""
    spec, plan = PLANS[True]
    marks = {H100: Exhausted(H100, h100_placed, 2, 0.0, "stuck")}
    quotas = (
        []
        if quota_gpus is None
        else [GpuQuota("gpus", {"requests.nvidia.com/gpu": quota_gpus}, {})]
    )
    pinned = spec.model_copy(
        update={
            "scaling": spec.scaling.model_copy(
                update={"replicas": total, "max_replicas": 40, "min_replicas": 0}
            )
        }
    )
    stepper = MixStepper(Stepper(pinned, plan, 15.0))
    pods = [VariantPod(H100, None)] * h100_placed
    step = stepper.step(MixState(ScalingState(), marks), None, pods, 1.0, quotas=quotas, held={})
    live = bound_seen(QuotaSeen(quotas, {}), pinned, plan, total, room_of(marks))
    assert step.bound == live
