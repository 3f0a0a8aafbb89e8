"""The rule for when a new status is worth a write (controller/status_news.py)."""

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenscale.controller.status_news import REFRESH_S, news


def _status(**decision: Any) -> dict[str, Any]:
    return {
        "observedGeneration": 1,
        "replicas": 2,
        "readyReplicas": 2,
        "decidedReplicas": 2,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Serving",
                "message": "2/2 replicas ready",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "live": {"at": "2026-01-01T00:00:00.000Z", "kvUsage": 0.3, "replicasReporting": 2},
        "decision": {
            "replicas": 2,
            "source": "metrics",
            "reason": "steady at 4.97 req/s",
            "cause": "Steady",
            "observedAt": "2026-01-01T00:00:00.000Z",
            "calibration": 0.84,
            "forecast": {"horizonSeconds": 182.0, "expectedRps": 5.0, "replicas": 2},
            **decision,
        },
        "scaling": {"observedAtSeconds": 1767225600.0, "calibration": 0.84},
    }


def test_a_quiet_tick_is_not_news() -> None:
    """What a quiet service's tick changed (issue 38, 9): the read's time, the calibration
    and the forecast's horizon by a little, the numbers in the reason."""
    stored = _status()
    new = _status(
        observedAt="2026-01-01T00:00:15.000Z",
        calibration=0.86,
        reason="steady at 5.02 req/s",
        forecast={"horizonSeconds": 182.004, "expectedRps": 5.1, "replicas": 2},
    )
    new["live"]["at"] = "2026-01-01T00:00:15.000Z"
    stored["live"]["sampleAgeSeconds"], new["live"]["sampleAgeSeconds"] = 1.2, 9.7  # the scrape
    new["scaling"] = {"observedAtSeconds": 1767225615.0, "calibration": 0.86}
    assert news(stored, new) is None


def test_what_a_reader_acts_on_is_news() -> None:
    stored = _status()
    assert news(None, stored) is not None  # the first status
    assert news(stored, _status(replicas=3)) == "status.decision.replicas"
    assert news(stored, _status(cause="Pressure")) == "status.decision.cause"
    moved = copy.deepcopy(stored)
    moved["live"]["kvUsage"] = 0.95  # a figure past the threshold
    assert news(stored, moved) == "status.live.kvUsage"
    ready = copy.deepcopy(stored)
    ready["readyReplicas"] = 1  # a count
    assert news(stored, ready) == "status.readyReplicas"
    flipped = copy.deepcopy(stored)
    flipped["conditions"][0]["status"] = "False"
    assert news(stored, flipped) == "status.conditions[0].status"
    started = copy.deepcopy(stored)
    started["scaling"]["lowSinceSeconds"] = 1767225615.0  # a streak begins: a field appears
    assert news(stored, started) == "status.scaling.lowSinceSeconds"


def test_the_stored_observation_is_refreshed_after_five_minutes() -> None:
    stored = _status()
    late = _status(observedAt="2026-01-01T00:05:00.000Z")
    assert REFRESH_S == 300
    assert news(stored, late) == "refresh"
    assert news(stored, _status(observedAt="2026-01-01T00:04:59.000Z")) is None


@given(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.floats(min_value=0.0, max_value=0.0999),
)
def test_a_figure_within_ten_percent_is_never_news(value: float, share: float) -> None:
    moved = value * (1 + share)
    assert news({"live": {"x": value}}, {"live": {"x": moved}}) is None


@given(st.integers(min_value=-1000, max_value=1000), st.integers(min_value=-1000, max_value=1000))
def test_a_count_is_news_whenever_it_changes(old: int, new: int) -> None:
    assert (news({"replicas": old}, {"replicas": new}) is None) == (old == new)


def test_the_engines_smoothed_memory_is_not_news_but_a_streak_is() -> None:
    stored = _status()
    stored["scaling"]["rate"] = {"levelRps": 5.0, "lastErrorRps": 0.02, "atSeconds": 1.0}
    new = copy.deepcopy(stored)
    new["scaling"]["rate"] = {"levelRps": 5.6, "lastErrorRps": -0.05, "atSeconds": 16.0}
    assert news(stored, new) is None
    new["scaling"]["pressureSinceSeconds"] = 16.0
    assert news(stored, new) == "status.scaling.pressureSinceSeconds"


def test_the_forecasts_working_is_not_news_but_its_count_is() -> None:
    stored = _status()
    noisy = _status(forecast={"horizonSeconds": 182.0, "expectedRps": 0.71, "replicas": 2})
    stored["decision"]["forecast"]["expectedRps"] = 0.5  # a low rate's noise × the horizon
    assert news(stored, noisy) is None
    more = _status(forecast={"horizonSeconds": 182.0, "expectedRps": 5.0, "replicas": 3})
    assert news(stored, more) == "status.decision.forecast.replicas"
