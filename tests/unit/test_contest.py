"""``ReplicasContested`` (controller/contest.py): one undo is noted, a second foreign change
within the window stops the fight, and the hold ends when the workload is back or the spec
changes."""

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenscale.api.status import Condition
from tokenscale.controller.contest import CONTESTED, FIGHT_WINDOW_S, judge, replicas_writer

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:00:30Z"
LATE = "2026-01-01T01:00:00Z"


def _step(previous: list[Condition], live: int, last: int, target: int, now: str) -> Any:
    return judge(previous, live, last, target, "hpa (Update)", False, now, 3)


def test_first_change_is_undone_and_noted_the_second_holds_and_names_the_writer() -> None:
    first = _step([], live=4, last=2, target=2, now=T0)
    assert first.hold is None  # undone
    assert (first.condition.status, first.condition.reason) == ("Unknown", "UndoneOnce")
    second = _step([first.condition], live=4, last=2, target=2, now=T1)
    assert second.hold == 4
    assert (second.condition.status, second.condition.reason) == ("True", "SecondWriter")
    assert "hpa (Update)" in second.condition.message
    assert second.condition.last_transition_time == T1  # since when
    # held: no new undo while the other writer keeps its count
    third = _step([second.condition], live=4, last=4, target=2, now=T1)
    assert third.hold == 4
    assert third.condition.last_transition_time == T1
    # held a whole window: the decided count once more, then held again if changed back
    retry = _step([third.condition], live=4, last=4, target=2, now=LATE)
    assert retry.hold is None
    assert retry.condition.reason == "UndoneOnce"
    again = _step([retry.condition], live=4, last=2, target=2, now=LATE)
    assert again.hold == 4
    # the workload back at the decision: tokenscale writes again
    back = _step([third.condition], live=2, last=4, target=2, now=LATE)
    assert back.hold is None
    assert back.condition.status == "False"


def test_a_second_change_long_after_the_first_is_a_new_first() -> None:
    first = _step([], live=4, last=2, target=2, now=T0)
    assert FIGHT_WINDOW_S < 3600
    later = _step([first.condition], live=5, last=2, target=2, now=LATE)
    assert later.hold is None
    assert later.condition.reason == "UndoneOnce"


def test_a_spec_change_ends_the_hold() -> None:
    held = _step(
        [_step([], live=4, last=2, target=2, now=T0).condition], live=4, last=2, target=2, now=T1
    )
    assert held.hold == 4
    fresh = judge([held.condition], 4, 4, 3, None, True, LATE, 4)
    assert fresh.hold is None
    assert fresh.condition.type == CONTESTED


@given(live=st.integers(0, 50), other=st.integers(0, 50))
def test_tokenscales_own_count_is_never_contested(live: int, other: int) -> None:
    """A live count equal to what tokenscale set last, or to what it sets now, is not another
    writer's."""
    for last, target in ((live, other), (other, live)):
        got = judge([], live, last, target, None, False, T0, 1)
        assert got.hold is None
        assert got.condition.status == "False"


def test_the_writer_is_the_latest_other_manager_holding_spec_replicas() -> None:
    replicas = {"f:spec": {"f:replicas": {}}}
    workload = {
        "metadata": {
            "managedFields": [
                {"manager": "tokenscale", "operation": "Apply", "fieldsV1": replicas, "time": T1},
                {"manager": "old", "operation": "Update", "fieldsV1": replicas, "time": T0},
                {"manager": "hpa", "operation": "Update", "fieldsV1": replicas, "time": T1},
                {"manager": "labels", "operation": "Update", "fieldsV1": {"f:metadata": {}}},
            ]
        }
    }
    assert replicas_writer(workload) == "hpa (Update)"
    assert replicas_writer({"metadata": {}}) is None
