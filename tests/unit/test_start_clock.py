"""The pod runner's time base: when a twin's modelled cold start begins."""

import math

from hypothesis import given
from hypothesis import strategies as st

from tokenscale.playground.start_clock import (
    Decided,
    Write,
    asking_observation,
    cold_start_begins,
)


@given(
    st.floats(0.0, 1e6),
    st.floats(0.0, 5.0),
    st.floats(1.0, 100.0),
)
def test_the_latency_after_the_observation_counts_at_its_real_length(
    observed: float, latency: float, speed: float
) -> None:
    """In modelled seconds ((wall − observed) × speed) the cold start begins exactly the wall
    latency after the observation: the control plane's time is not multiplied by the speed."""
    begins = cold_start_begins(observed + latency, observed, speed)
    assert observed <= begins <= observed + latency
    assert math.isclose((begins - observed) * speed, latency, abs_tol=1e-6)


def test_at_speed_20_a_wall_second_of_latency_is_one_modelled_second_not_twenty() -> None:
    begins = cold_start_begins(101.0, 100.0, 20.0)
    assert math.isclose(begins, 100.05)
    assert math.isclose((begins - 100.0) * 20.0, 1.0)


def test_at_speed_1_the_cold_start_begins_when_the_pod_is_noticed() -> None:
    assert cold_start_begins(101.0, 100.0, 1.0) == 101.0


def test_without_an_asking_observation_the_cold_start_begins_when_noticed() -> None:
    assert cold_start_begins(101.0, None, 20.0) == 101.0
    assert cold_start_begins(101.0, 102.0, 20.0) == 101.0  # no observation after the pod


def test_a_write_is_matched_with_the_decision_that_asked_for_its_count() -> None:
    decisions = [Decided(10.0, 3), Decided(11.0, 3), Decided(12.0, 4), Decided(13.0, 4)]
    write = Write(12.2, 4, previous_s=9.5)
    assert asking_observation(decisions, write) == 12.0


def test_a_write_whose_decision_has_not_been_reported_yet_has_none() -> None:
    """The operator writes its status after the Deployment: until the status arrives, the only
    decisions known are older ones, with another count or before the previous write."""
    assert asking_observation([Decided(10.0, 3)], Write(11.2, 4, previous_s=10.1)) is None
    assert asking_observation([Decided(10.0, 4)], Write(12.2, 4, previous_s=11.1)) is None


def test_back_to_a_count_asked_for_before_takes_the_new_decision() -> None:
    decisions = [Decided(10.0, 3), Decided(11.0, 2), Decided(12.0, 3)]
    assert asking_observation(decisions, Write(10.2, 3)) == 10.0
    assert asking_observation(decisions, Write(12.3, 3, previous_s=11.2)) == 12.0


def test_a_change_made_by_hand_has_no_asking_observation() -> None:
    assert asking_observation([Decided(10.0, 3)], Write(20.0, 5, previous_s=10.2)) is None
