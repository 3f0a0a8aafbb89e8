"""PURE: a second writer of the workload's replicas, and when tokenscale stops fighting it.

In direct mode tokenscale writes the replicas; a change by anyone else is drift and undone. A
writer that changes them back (an HPA with a higher ``minReplicas``, another controller, a
second InferenceService referencing the same workload) would make that a tug of war: pods
created and deleted every few seconds. So the condition ``ReplicasContested`` remembers an
undo: a first foreign change is undone and noted (``Unknown``, ``UndoneOnce``, since then); a
second one within :data:`FIGHT_WINDOW_S` of the first is a fight: ``True``, ``SecondWriter``,
naming the writer where ``metadata.managedFields`` tells it (the manager that holds
``spec.replicas`` besides tokenscale's), and tokenscale holds the workload at its live count
(writes no replicas) until the workload is at the decided count again or the spec changes;
after a whole window held it sets the decided count once more (the other writer may be gone: a
change back holds again), so a fight costs one undo per window instead of one per interval.
A noted undo with no second change within the window is forgotten (``False``).
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokenscale.api.status import Condition
from tokenscale.controller.status import condition

CONTESTED = "ReplicasContested"
FIGHT_WINDOW_S = 600.0
"""A second foreign change this soon after an undo is a second writer, not a manual edit."""
OURS = ("tokenscale", "tokenscale-handover")


@dataclass(frozen=True)
class Contest:
    """The condition, and the count to hold at (None: write the decision)."""

    condition: Condition
    hold: int | None


def replicas_writer(workload: dict[str, Any] | None) -> str | None:
    """The latest field manager other than tokenscale's that holds ``spec.replicas``, with its
    operation (None: the object's managedFields do not say)."""
    entries = ((workload or {}).get("metadata") or {}).get("managedFields") or []
    found: tuple[str, str] | None = None
    for e in entries:
        fields = (e.get("fieldsV1") or {}).get("f:spec") or {}
        if "f:replicas" in fields and e.get("manager") not in OURS:
            stamp = str(e.get("time") or "")
            if found is None or stamp >= found[0]:
                found = (stamp, f"{e.get('manager')} ({e.get('operation')})")
    return None if found is None else found[1]


def _epoch_s(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def judge(
    previous: list[Condition],
    live: int | None,
    last_set: int | None,
    target: int,
    writer: str | None,
    respecified: bool,
    now: str,
    gen: int | None,
) -> Contest:
    """``live``: the workload's replicas as read; ``last_set``: the count tokenscale set last
    (``status.replicas``); ``target``: what it would write now; ``now``: the wall clock (RFC
    3339, the conditions' clock). A foreign change: ``live`` is neither what tokenscale set
    last nor what it writes now."""
    now_s = _epoch_s(now) or 0.0
    old = next((c for c in previous if c.type == CONTESTED), None)
    who = writer or "a writer the workload's managedFields do not name"
    foreign = live is not None and last_set is not None and live not in (last_set, target)
    if old is not None and old.status == "True" and not respecified:
        if live == target or live is None:
            why = f"the workload is at the decided {target} replicas again: tokenscale writes them"
            return Contest(condition(previous, CONTESTED, "False", "Settled", why, now, gen), None)
        held_since = _epoch_s(old.last_transition_time)
        if held_since is None or now_s - held_since <= FIGHT_WINDOW_S:
            return Contest(old.model_copy(update={"observed_generation": gen}), live)
        # held a whole window: try the decided count once more (the other writer may be gone)
        why = (
            f"held {live} replicas for {FIGHT_WINDOW_S:.0f} s beside {who}: setting the decided "
            f"{target} once more; a change back within {FIGHT_WINDOW_S:.0f} s holds again"
        )
        return Contest(condition(previous, CONTESTED, "Unknown", "UndoneOnce", why, now, gen), None)
    if foreign:
        since = (
            None if old is None or old.status != "Unknown" else _epoch_s(old.last_transition_time)
        )
        if since is not None and now_s - since <= FIGHT_WINDOW_S and not respecified:
            why = (
                f"spec.replicas was changed to {live} again after tokenscale set {last_set}, "
                f"by {who}: tokenscale holds {live} and stops writing replicas (the decision "
                f"is {target}); remove the other writer (an HPA, a second InferenceService's "
                "workloadRef, a controller), or set spec.scaling.actuation to advisory or keda"
            )
            return Contest(
                condition(previous, CONTESTED, "True", "SecondWriter", why, now, gen), live
            )
        why = (
            f"spec.replicas changed to {live} by {who} after tokenscale set {last_set}: undone "
            f"to {target}; a second change within {FIGHT_WINDOW_S:.0f} s stops tokenscale "
            "writing replicas"
        )
        return Contest(condition(previous, CONTESTED, "Unknown", "UndoneOnce", why, now, gen), None)
    if old is not None and old.status == "Unknown" and not respecified:
        since = _epoch_s(old.last_transition_time)
        if since is not None and now_s - since <= FIGHT_WINDOW_S:
            return Contest(old.model_copy(update={"observed_generation": gen}), None)
    why = "no other writer of spec.replicas seen"
    return Contest(condition(previous, CONTESTED, "False", "NoOtherWriter", why, now, gen), None)
