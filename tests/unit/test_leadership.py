"""The Lease state machine (pure): acquire, renew, expire, take over, release."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tokenscale.controller.leadership import (
    ElectionConfig,
    LeaseRecord,
    Memory,
    Observed,
    leading,
    lost_write,
    release,
    step,
    wrote,
)

A = ElectionConfig(identity="a", namespace="ops")
B = ElectionConfig(identity="b", namespace="ops")


def _held_by(holder: str, transitions: int = 0) -> Observed:
    return Observed(LeaseRecord(holder, 15, "t0", "t0", transitions), "1")


def test_no_lease_creates_one_naming_ourselves() -> None:
    s = step(A, 0.0, "t0", Observed(None), Memory())
    assert s.action == "create"
    assert s.write == LeaseRecord("a", 15, "t0", "t0", 0)
    assert not leading(A, s.memory, 0.0)  # not before the write succeeds
    assert leading(A, wrote(s.memory, 0.0, s.write), 0.0)


def test_holder_renews_and_stays_leader_only_until_the_renew_deadline() -> None:
    mem = wrote(Memory(), 0.0, LeaseRecord("a", 15, "t0", "t0", 0))
    s = step(A, 2.0, "t2", _held_by("a"), mem)
    assert s.action == "renew"
    assert s.write is not None
    assert s.write.renew_time == "t2"
    assert s.write.acquire_time == "t0"
    assert leading(A, mem, 9.9)
    assert not leading(A, mem, 10.0)  # no renewal for renew_deadline: it stops


def test_another_holder_is_waited_for_until_the_record_is_stale_on_our_clock() -> None:
    mem = Memory()
    s = step(B, 100.0, "x", _held_by("a"), mem)
    assert s.action == "wait"
    s = step(B, 114.9, "x", _held_by("a"), s.memory)
    assert s.action == "wait"  # same record for less than the lease duration
    s = step(B, 115.0, "x", _held_by("a", transitions=3), s.memory)
    assert s.action == "wait"  # the record changed (a renewal): the clock restarts
    s = step(B, 130.0, "t", _held_by("a", transitions=3), s.memory)
    assert s.action == "take"
    assert s.write == LeaseRecord("b", 15, "t", "t", 4)


def test_a_released_lease_is_taken_at_once() -> None:
    released = release(LeaseRecord("a", 15, "t0", "t5", 2), "a", "t9")
    assert released == LeaseRecord("", 1, "t0", "t9", 2)
    s = step(B, 0.0, "t10", Observed(released, "7"), Memory())
    assert s.action == "take"
    assert release(LeaseRecord("b", 15, "t0", "t5", 2), "a", "t9") is None


def test_seeing_another_holder_ends_our_lead_at_once() -> None:
    mem = wrote(Memory(), 0.0, LeaseRecord("a", 15, "t0", "t0", 0))
    s = step(A, 1.0, "t1", _held_by("b", transitions=1), mem)
    assert s.action == "wait"
    assert not leading(A, s.memory, 1.0)


def test_a_lost_race_forgets_the_record_and_does_not_lead() -> None:
    s = step(B, 50.0, "t", Observed(LeaseRecord("", 1, None, None, 0), "3"), Memory())
    assert s.action == "take"
    mem = lost_write(s.memory)
    assert not leading(B, mem, 50.0)
    assert mem.last_record is None


@pytest.mark.parametrize(("duration", "deadline", "retry"), [(10, 10, 2), (15, 10, 10), (5, 10, 2)])
def test_durations_must_be_ordered(duration: float, deadline: float, retry: float) -> None:
    with pytest.raises(ValidationError, match="retry period < renew deadline < lease duration"):
        ElectionConfig(
            identity="a",
            namespace="ops",
            lease_duration_s=duration,
            renew_deadline_s=deadline,
            retry_period_s=retry,
        )


def test_the_spec_round_trips() -> None:
    record = LeaseRecord("a", 15, "2026-01-01T00:00:00.000000Z", None, 3)
    assert LeaseRecord.from_spec(record.to_spec()) == record
    assert LeaseRecord.from_spec({}) == LeaseRecord("", 0, None, None, 0)


@given(st.lists(st.tuples(st.sampled_from("ab"), st.floats(0, 5)), min_size=1, max_size=60))
def test_two_candidates_sharing_one_lease_never_both_lead(
    schedule: list[tuple[str, float]],
) -> None:
    """Any interleaving of attempts (each a read then a conditional write): at no instant do
    both count as leading."""
    configs = {"a": A, "b": B}
    memories = {"a": Memory(), "b": Memory()}
    lease: LeaseRecord | None = None
    version = 0
    now = 0.0
    for who, advance in schedule:
        now += advance
        s = step(configs[who], now, f"{now}", Observed(lease, str(version)), memories[who])
        memories[who] = s.memory
        if s.write is not None:
            lease, version = s.write, version + 1
            memories[who] = wrote(memories[who], now, s.write)
        assert not (leading(A, memories["a"], now) and leading(B, memories["b"], now))


def test_settings_ask_for_the_pod_identity_and_ordered_durations() -> None:
    from tokenscale.controller.settings import Settings  # noqa: PLC0415

    assert Settings().election() is None
    with pytest.raises(ValidationError, match="POD_NAMESPACE"):
        Settings(leader_elect=True)
    with pytest.raises(ValidationError, match="retry period < renew deadline"):
        Settings(
            leader_elect=True,
            leader_election_namespace="ops",
            leader_election_identity="pod-a",
            renew_deadline_seconds=20,
        )
    election = Settings(
        leader_elect=True, leader_election_namespace="ops", leader_election_identity="pod-a"
    ).election()
    assert election is not None
    assert (election.identity, election.namespace, election.name) == (
        "pod-a",
        "ops",
        "tokenscale-leader",
    )
