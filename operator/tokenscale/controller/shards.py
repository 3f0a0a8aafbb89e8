"""Namespace shards: several operators on one cluster, each on its own namespaces.

Each elected operator records the namespaces it watches on its Lease, in the annotation
``tokenscale.io/namespaces`` (comma-separated, sorted; ``*`` for every namespace). Before it
competes for its own Lease, and again once it holds it, an operator reads the other Leases
in its Lease namespace and refuses to start when a live one claims a namespace it would
watch: two leaders on one namespace would fight over every object in it. A Lease is live
while it names a holder and was renewed within ``max(60 s, 4 × leaseDurationSeconds)`` of
our clock (a shard that was removed while its leader crashed stops blocking after that; the
margin allows for clock skew between nodes).

Pure: the Leases come in as the API's JSON, the time as an argument.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

NAMESPACES_ANNOTATION = "tokenscale.io/namespaces"
EVERY_NAMESPACE = "*"
STALE_MIN_S = 60.0
STALE_LEASE_DURATIONS = 4


class ShardConflictError(RuntimeError):
    """This operator's namespaces overlap a live shard's: it must not start."""


def claim(namespaces: Iterable[str] | None) -> str:
    """The annotation's value for these namespaces (None: every namespace)."""
    if namespaces is None:
        return EVERY_NAMESPACE
    return ",".join(sorted(set(namespaces)))


def parse_claim(text: str) -> frozenset[str] | None:
    """The namespaces an annotation claims (None: every namespace)."""
    parts = frozenset(p.strip() for p in text.split(",") if p.strip())
    return None if EVERY_NAMESPACE in parts else parts


@dataclass(frozen=True)
class Conflict:
    lease: str
    holder: str
    namespaces: tuple[str, ...]
    """The overlap; ``("*",)`` when either side watches every namespace."""


def _time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _live(spec: dict[str, Any], now: datetime) -> bool:
    if not spec.get("holderIdentity"):
        return False  # released on a clean stop
    renewed = _time(spec.get("renewTime"))
    if renewed is None:
        return True
    duration = spec.get("leaseDurationSeconds")
    seconds = float(duration) if isinstance(duration, int | float) else 15.0
    return (now - renewed).total_seconds() < max(STALE_MIN_S, STALE_LEASE_DURATIONS * seconds)


def conflicts(
    mine: frozenset[str] | None, lease_name: str, leases: Iterable[dict[str, Any]], now: datetime
) -> list[Conflict]:
    """The live Leases other than ``lease_name`` whose claimed namespaces overlap ``mine``
    (None: every namespace)."""
    out = []
    for lease in leases:
        meta = lease.get("metadata") or {}
        text = (meta.get("annotations") or {}).get(NAMESPACES_ANNOTATION)
        spec = lease.get("spec") or {}
        if meta.get("name") == lease_name or text is None or not _live(spec, now):
            continue
        theirs = parse_claim(str(text))
        overlap: tuple[str, ...]
        if mine is None and theirs is None:
            overlap = (EVERY_NAMESPACE,)
        elif theirs is None:
            overlap = tuple(sorted(mine or ()))
        elif mine is None:
            overlap = tuple(sorted(theirs))
        else:
            overlap = tuple(sorted(mine & theirs))
        if overlap:
            out.append(Conflict(str(meta.get("name")), str(spec.get("holderIdentity")), overlap))
    return out


def describe(found: list[Conflict], lease_namespace: str, lease_name: str) -> str:
    """The refusal, naming each overlap, the Lease that holds it and the fix."""
    parts = [
        f"namespace(s) {', '.join(c.namespaces)} already held by shard Lease "
        f"{lease_namespace}/{c.lease} (leader {c.holder})"
        for c in found
    ]
    return (
        f"refusing to start shard {lease_namespace}/{lease_name}: "
        + "; ".join(parts)
        + ". Shards must not overlap: remove the namespace(s) from this operator's "
        "--namespace (or the chart's shards) or from the other shard's, or stop it"
    )
