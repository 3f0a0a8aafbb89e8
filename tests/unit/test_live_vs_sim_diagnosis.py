"""What the live-vs-simulated comparison reports besides its three figures: how late the twins
received the load, and the first decision at which the two loops part."""

import pytest
from benchmarks.live_vs_sim import RoleAgreement, both_agree, first_divergence

from tokenscale.playground.lateness import arrival_lateness_s, lateness_summary
from tokenscale.simulation.minutes import MinutePoint, agreement, disagreements


def test_lateness_is_each_arrival_against_the_trace_in_order() -> None:
    # the twins' clock read 100 s when the replay began; the second request came 0.3 s late,
    # the third 0.05 s
    late = arrival_lateness_s([100.0, 101.3, 102.05], [2.0, 0.0, 1.0], 100.0)
    assert late == pytest.approx([0.0, 0.3, 0.05])
    summary = lateness_summary(late)
    assert summary is not None
    assert summary["max"] == pytest.approx(0.3)
    assert summary["p50"] == pytest.approx(0.05)


def test_lateness_is_not_guessed_when_a_request_never_reached_a_twin() -> None:
    assert arrival_lateness_s([100.0], [0.0, 1.0], 100.0) is None
    assert lateness_summary(None) is None


def test_the_first_divergence_is_the_first_simulated_decision_live_answers_otherwise() -> None:
    live = [
        {"t_s": -5.0, "replicas": 1, "reason": "blind"},  # before the load: not compared
        {"t_s": 14.6, "replicas": 2, "reason": "hold 2"},
        {"t_s": 29.4, "replicas": 2, "reason": "hold 2"},
        {"t_s": 44.5, "replicas": 2, "reason": "hold 2"},
    ]
    sim = [(14.5, 2, "hold 2"), (29.5, 3, "scale up 2→3"), (44.5, 3, "hold 3")]
    found = first_divergence(live, sim, 15.0)
    assert found is not None
    live_d, sim_d = found
    assert live_d["t_s"] == 29.4
    assert sim_d == (29.5, 3, "scale up 2→3")
    assert first_divergence(live, sim[:1], 15.0) is None


def test_a_pd_service_agrees_only_in_minutes_where_every_role_does() -> None:
    def minutes(*desired: int) -> list[MinutePoint]:
        return [
            MinutePoint(minute=m, t_s=60.0 * m, desired=d, ready=d) for m, d in enumerate(desired)
        ]

    def role(live: list[MinutePoint], sim: list[MinutePoint]) -> RoleAgreement:
        return RoleAgreement(live, sim, agreement(live, sim), disagreements(live, sim), 0, 0)

    roles = {
        "prefill": role(minutes(1, 1, 1, 1), minutes(1, 2, 1, 1)),  # minute 1 apart
        "decode": role(minutes(2, 3, 3, 3), minutes(2, 3, 4, 3)),  # minute 2 apart
    }
    assert roles["prefill"].agreement == pytest.approx(0.75)
    assert both_agree(roles) == pytest.approx(0.5)
