"""Demand in front of the engines, per service: the endpoint picker's queue for the service's
InferencePool and the user's activation query (``spec.scaling.activation.query``).

This is what wakes a service at zero replicas (no engine reports then) and what the gateway
holds that the engines have not seen. Policy for odd answers, as for the engines' metrics:

- the pool's queue has no series but its saturation has one → the endpoint picker reports for
  the pool and holds nothing: 0 (a gauge vector has no series for a label set never set);
- neither → unread (None), with the reason;
- the activation query: no series, NaN, ±Inf, a negative or implausible value, or a failed
  query → unread (None), with the reason. Unread never counts as 0: a service does not go to
  zero on it (``scaling/zero.py``).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tokenscale.metrics.answers import Sample
from tokenscale.metrics.bounds import judged
from tokenscale.metrics.promql import QueryConfig
from tokenscale.metrics.source import ServiceKey


@dataclass(frozen=True)
class DemandQuery:
    """What to read for one service."""

    pool: str | None
    """The InferencePool's name (``spec.gateway.inferencePool``); None: no pool."""
    activation: str | None
    """``spec.scaling.activation.query``; None: none."""


@dataclass(frozen=True)
class Demand:
    """What was read for one service (None: not read; ``problems`` says why)."""

    gateway_queued: float | None = None
    pool_saturation: float | None = None
    activation_demand: float | None = None
    problems: tuple[str, ...] = ()
    gateway_queued_sheddable: float | None = None

    def fields(self) -> dict[str, float | None]:
        """The Snapshot fields this reading fills."""
        return {
            "gateway_queued": self.gateway_queued,
            "gateway_queued_sheddable": self.gateway_queued_sheddable,
            "pool_saturation": self.pool_saturation,
            "activation_demand": self.activation_demand,
        }


PoolKey = tuple[str, str]
"""(namespace, InferencePool name)."""


def by_pool(series: Iterable[Sample], field: str, cfg: QueryConfig) -> dict[PoolKey, float]:
    """The judged value of each (namespace, pool) series (implausible values dropped)."""
    out: dict[PoolKey, float] = {}
    for s in series:
        ns, pool = s.labels.get(cfg.namespace_label), s.labels.get(cfg.pool_label)
        value, _ = judged(field, s.value)
        if ns and pool and value is not None:
            out[(ns, pool)] = value
    return out


def activation_value(series: list[Sample] | None, error: str | None) -> tuple[float | None, str]:
    """The activation query's value, or None and why."""
    if series is None:
        return None, f"activation query failed: {error or 'no answer'}"
    if not series:
        return None, "activation query: no series"
    value, problem = judged("activation_demand", series[0].value)
    if value is None:
        return None, f"activation query: {problem}"
    return value, ""


def assemble(
    wanted: Mapping[ServiceKey, DemandQuery],
    queued: Mapping[PoolKey, float],
    saturation: Mapping[PoolKey, float],
    gateway_error: str | None,
    activation: Mapping[ServiceKey, tuple[float | None, str]],
    sheddable: Mapping[PoolKey, float] | None = None,
) -> dict[ServiceKey, Demand]:
    """One :class:`Demand` per wanted service (see the module docstring)."""
    out: dict[ServiceKey, Demand] = {}
    for key, q in wanted.items():
        problems: list[str] = []
        gw_q: float | None = None
        shed_q: float | None = None
        sat: float | None = None
        if q.pool is not None:
            pool = (key[0], q.pool)
            sat = saturation.get(pool)
            gw_q = queued.get(pool)
            if gw_q is None and sat is not None:
                gw_q = 0.0  # the picker reports for the pool and has queued nothing
            if gw_q is None:
                why = gateway_error or "no endpoint-picker series for this pool"
                problems.append(f"gateway_queued: {why} (inference_pool={q.pool})")
            elif sheddable is not None:  # no negative-priority series: none of it is sheddable
                shed_q = min(gw_q, (sheddable or {}).get(pool, 0.0))
        act: float | None = None
        if q.activation is not None:
            act, why = activation.get(key, (None, "activation query not run"))
            if act is None:
                problems.append(why)
        out[key] = Demand(gw_q, sat, act, tuple(problems), shed_q)
    return out
