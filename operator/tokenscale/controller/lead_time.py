"""Lead time from what the cluster shows: how long this service's pods took from creation to Ready.

For each pod of the Deployment with a ``Ready=True`` condition: ``lastTransitionTime −
metadata.creationTimestamp`` (image pull, weight load, CUDA graphs, readiness probe). The
lead time is the median of the ``SAMPLES`` most recently created such pods; None until one
has become Ready. A pod whose readiness flapped counts its last transition (an overestimate,
which errs towards scaling earlier). Pure: the pods come in as the API's JSON.
"""

import statistics
from collections.abc import Iterable
from datetime import datetime
from typing import Any

SAMPLES = 5


def _time(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def pod_lead_time(pod: dict[str, Any]) -> tuple[float, float] | None:
    """(created, seconds from creation to Ready) for a Ready pod, else None."""
    created = _time((pod.get("metadata") or {}).get("creationTimestamp"))
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = next(
        (c for c in conditions if c.get("type") == "Ready" and c.get("status") == "True"), None
    )
    if created is None or ready is None:
        return None
    at = _time(ready.get("lastTransitionTime"))
    if at is None or at < created:
        return None
    return created, at - created


def lead_time_s(pods: Iterable[dict[str, Any]]) -> float | None:
    samples = sorted(s for s in (pod_lead_time(p) for p in pods) if s is not None)
    recent = [seconds for _, seconds in samples[-SAMPLES:]]
    return round(statistics.median(recent), 3) if recent else None
