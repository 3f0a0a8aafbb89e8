"""Judging one answer of Prometheus' instant-query API (``GET /api/v1/query``) before use.

Prometheus, a proxy in front of it or another server speaking its API can answer HTTP 200 with
anything. Only ``{"status": "success", "data": {"resultType": "vector", "result": [...]}}``
whose elements are ``{"metric": {label: value, …}, "value": [time, "number"]}`` is a vector;
every other shape (``"status": "error"``, ``result: null``, a scalar or matrix result, a sample
whose ``metric`` is not a map) is a :class:`~tokenscale.metrics.source.QueryError` for the
whole query, of kind ``answer``. Within a vector, a sample whose value cannot be read is dropped
and named per series by the caller (``metrics/prometheus.py``); a malformed sample never
raises.
"""

from typing import Any, NamedTuple

from tokenscale.metrics.source import QueryError, QueryErrorKind


class Sample(NamedTuple):
    """One element of a vector (a tuple, cheap to make: a fleet read makes one per series of
    every answer, tens of thousands a cycle at 1,000 services)."""

    labels: dict[str, str]
    """Only the labels whose value is a string (read-only: shared with the parsed answer)."""
    value: Any
    """``[time, "number"]`` as sent; read with :func:`tokenscale.metrics.bounds.number`."""


def _answer(name: str, message: str) -> QueryError:
    return QueryError(name, QueryErrorKind.ANSWER, message)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def judge_vector(name: str, body: Any) -> list[Sample] | QueryError:
    """The samples of an instant-vector answer, or what is wrong with it (named ``name``)."""
    if not isinstance(body, dict):
        return _answer(name, f"{name}: the answer is not a JSON object")
    status = body.get("status")
    if status != "success":
        why = body.get("error") or body.get("errorType") or "no error text"
        return _answer(name, f"{name}: Prometheus answered status {status!r}: {_short(why)}")
    data = body.get("data")
    if not isinstance(data, dict):
        return _answer(name, f"{name}: the answer has no data object")
    kind, result = data.get("resultType"), data.get("result")
    if kind != "vector":
        return _answer(name, f"{name}: expected a vector result, got resultType {_short(kind)}")
    if not isinstance(result, list):
        return _answer(name, f"{name}: the vector result is {_short(result)}")
    samples: list[Sample] = []
    for i, element in enumerate(result):
        metric = element.get("metric") if isinstance(element, dict) else None
        if not isinstance(metric, dict):
            return _answer(name, f"{name}: sample {i} has no label map (metric {_short(metric)})")
        labels: dict[str, str] = metric
        for value in metric.values():  # keys parsed from JSON are strings; values may be anything
            if not isinstance(value, str):
                labels = {k: v for k, v in metric.items() if isinstance(v, str)}
                break
        samples.append(Sample(labels, element.get("value")))
    return samples
