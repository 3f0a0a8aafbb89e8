"""Namespace shards: which Leases a starting operator must not overlap (pure)."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenscale.controller.shards import (
    NAMESPACES_ANNOTATION,
    Conflict,
    claim,
    conflicts,
    describe,
    parse_claim,
)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def lease(
    name: str,
    namespaces: str | None,
    holder: str = "pod-1",
    renewed_s_ago: float = 1.0,
    duration_s: int = 15,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespaces is not None:
        meta["annotations"] = {NAMESPACES_ANNOTATION: namespaces}
    renew = (NOW - timedelta(seconds=renewed_s_ago)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    spec = {"holderIdentity": holder, "leaseDurationSeconds": duration_s, "renewTime": renew}
    return {"metadata": meta, "spec": spec}


def test_claim_round_trips_and_every_namespace_is_a_star() -> None:
    assert claim(["b", "a", "b"]) == "a,b"
    assert parse_claim("a,b") == frozenset({"a", "b"})
    assert claim(None) == "*"
    assert parse_claim("*") is None


def test_an_overlapping_live_shard_is_named_with_the_overlap() -> None:
    leases = [
        lease("ts-a", "team-a,team-b"),
        lease("ts-b", "team-c"),
        lease("ts-c", "team-b,team-c", holder=""),  # released: not live
        lease("ts-d", "team-b", renewed_s_ago=600),  # its leader died long ago
        lease("unrelated", None),  # a Lease that is not a shard's
    ]
    found = conflicts(frozenset({"team-b", "team-z"}), "ts-new", leases, NOW)
    assert found == [Conflict("ts-a", "pod-1", ("team-b",))]
    text = describe(found, "tokenscale-system", "ts-new")
    assert "team-b" in text
    assert "tokenscale-system/ts-a" in text
    assert "must not overlap" in text


def test_its_own_lease_and_disjoint_shards_do_not_conflict() -> None:
    leases = [lease("ts-a", "team-a"), lease("ts-b", "team-b")]
    assert conflicts(frozenset({"team-a"}), "ts-a", leases, NOW) == []


def test_every_namespace_overlaps_any_shard_both_ways() -> None:
    assert conflicts(None, "ts-all", [lease("ts-a", "team-a")], NOW) == [
        Conflict("ts-a", "pod-1", ("team-a",))
    ]
    assert conflicts(frozenset({"x"}), "ts-x", [lease("ts-all", "*")], NOW) == [
        Conflict("ts-all", "pod-1", ("x",))
    ]
    assert conflicts(None, "ts-2", [lease("ts-1", "*")], NOW) == [Conflict("ts-1", "pod-1", ("*",))]


@pytest.mark.parametrize(("ago", "live"), [(59, True), (61, False), (30, True)])
def test_a_lease_is_live_for_four_durations_or_a_minute(ago: float, live: bool) -> None:
    found = conflicts(frozenset({"a"}), "me", [lease("other", "a", renewed_s_ago=ago)], NOW)
    assert bool(found) is live
    long_lease = lease("other", "a", renewed_s_ago=100, duration_s=30)  # 4 × 30 s = 120 s
    assert conflicts(frozenset({"a"}), "me", [long_lease], NOW)


names = st.frozensets(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=5)


@given(names, names)
def test_conflict_is_exactly_a_non_empty_intersection(
    mine: frozenset[str], theirs: frozenset[str]
) -> None:
    found = conflicts(mine, "me", [lease("other", claim(theirs))], NOW)
    assert bool(found) == bool(mine & theirs)
    if found:
        assert set(found[0].namespaces) == mine & theirs
