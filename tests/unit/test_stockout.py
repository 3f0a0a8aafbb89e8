"""A GPU variant runs out: unschedulable pods past the grace mark it exhausted, the need moves
to the next variant, and it is retried after the retry period."""

from typing import Any

from tokenscale.api.status import InferenceServiceStatus
from tokenscale.controller.variants import previous_marks, variant_pods
from tokenscale.scaling.stockout import (
    STOCKOUT_GRACE_S,
    STOCKOUT_RETRY_S,
    Exhausted,
    VariantPod,
    exhausted_variants,
)
from tokenscale.scaling.variant_order import VariantSlot, scale_variants

NOW = 1_800_000_000.0


def test_unschedulable_past_the_grace_marks_the_variant_with_the_count() -> None:
    pods = [
        VariantPod("h100", None),
        VariantPod("h100", NOW - STOCKOUT_GRACE_S - 1, "0/5 nodes are available"),
        VariantPod("h100", NOW - STOCKOUT_GRACE_S - 30, "0/5 nodes are available"),
        VariantPod("h100", NOW - 10),  # not yet past the grace
        VariantPod("l40s", None),
    ]
    marks = exhausted_variants(pods, NOW, {})
    assert set(marks) == {"h100"}
    m = marks["h100"]
    assert (m.placed, m.unplaced, m.since_s) == (1, 2, NOW)
    assert "2 pod(s) of h100 unschedulable for 330 s" in m.reason
    assert "0/5 nodes" in m.reason


def test_within_the_grace_nothing_is_marked() -> None:
    pods = [VariantPod("h100", NOW - STOCKOUT_GRACE_S + 5)]
    assert exhausted_variants(pods, NOW, {}) == {}


def test_the_mark_is_kept_until_the_retry_then_dropped() -> None:
    marked = Exhausted("h100", 1, 2, NOW, "why")
    # the pending pods are gone (the count moved): the mark is the memory
    later = exhausted_variants([VariantPod("h100", None)], NOW + 60, {"h100": marked})
    assert later["h100"].since_s == NOW
    assert later["h100"].unplaced == 2
    retried = exhausted_variants(
        [VariantPod("h100", None)], NOW + STOCKOUT_RETRY_S + 1, {"h100": marked}
    )
    assert retried == {}


def test_the_need_moves_to_the_next_variant() -> None:
    slots = [
        VariantSlot("h100", 0.141, replicas=4, max_replicas=1),  # exhausted: 1 placed
        VariantSlot("l40s", 0.173, replicas=6, max_replicas=24),
    ]
    out = scale_variants(slots, 10)
    assert out.counts == {"h100": 1, "l40s": 9}


def _pod(variant: str, scheduled: bool, since: str = "2027-01-15T08:00:00Z") -> dict[str, Any]:
    cond = (
        {"type": "PodScheduled", "status": "True"}
        if scheduled
        else {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
            "lastTransitionTime": since,
        }
    )
    return {
        "metadata": {"labels": {"tokenscale.io/variant": variant}},
        "status": {"phase": "Pending" if not scheduled else "Running", "conditions": [cond]},
    }


def test_pods_are_read_from_the_schedulers_condition() -> None:
    pods = variant_pods(
        [_pod("h100", True), _pod("h100", False), {"metadata": {"labels": {}}}], NOW
    )
    assert pods[0] == VariantPod("h100", None)
    assert pods[1].variant == "h100"
    assert pods[1].unschedulable_since_s is not None
    assert "Insufficient nvidia.com/gpu" in pods[1].message
    assert len(pods) == 2


def test_marks_round_trip_through_the_status() -> None:
    status = {
        "variants": [
            {
                "name": "h100",
                "replicas": 1,
                "exhausted": True,
                "unplaced": 3,
                "exhaustedSince": "2027-01-15T08:00:00Z",
                "reason": "r",
            },
            {"name": "l40s", "replicas": 9, "exhausted": False},
        ]
    }
    marks = previous_marks(InferenceServiceStatus.model_validate(status))
    assert set(marks) == {"h100"}
    assert marks["h100"].unplaced == 3
