"""Typed causes and typed query errors: words are rendered from values, never parsed."""

from prometheus_client import CollectorRegistry

from tests.unit.test_engine import NOW, _spec, snap
from tokenscale.controller.telemetry import Telemetry
from tokenscale.metrics.source import QueryError, QueryErrorKind
from tokenscale.planning import plan_service
from tokenscale.scaling import ScalingState
from tokenscale.scaling.cause import Cause
from tokenscale.scaling.stepper import Observation, Stepper


def _count(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_every_cause_has_words() -> None:
    for cause in Cause:
        assert cause.words
    assert {c for c in Cause if c.moves} == {
        Cause.PRESSURE,
        Cause.MODEL_NEED,
        Cause.SCALE_DOWN,
        Cause.BOUNDS,
        Cause.RATIO,  # a prefill/decode role raised by the ratio band
        Cause.SCALE_TO_ZERO,
        Cause.WAKE,
    }


def test_a_decision_carries_its_cause_and_its_numbers_apart_from_the_sentence() -> None:
    spec = _spec()
    stepper = Stepper(spec, plan_service(spec), 15.0)
    step = stepper.step(ScalingState(decided_replicas=2), Observation(NOW, snap(n=2, kv=0.95)), NOW)
    d = step.decision
    assert d is not None
    assert d.cause is Cause.PRESSURE
    assert d.why.startswith("kv_usage 0.95 ≥ 0.9 on 2 reporting")
    assert d.reason == f"scale up 2→{d.replicas}: {d.why}"


def test_query_errors_are_counted_by_their_typed_kind() -> None:
    t = Telemetry()
    errors = [
        QueryError("waiting", QueryErrorKind.TIMEOUT, "waiting: timed out after 5 s"),
        QueryError("kv_max", QueryErrorKind.TIMEOUT, "kv_max: timed out after 5 s"),
        QueryError("running", QueryErrorKind.HTTP, "running: Prometheus answered 503"),
        QueryError("ttft_p99", QueryErrorKind.UNREACHABLE, "ttft_p99: http://x unreachable"),
    ]
    t.record_query_errors(errors)
    total = "tokenscale_prometheus_query_errors_total"
    assert _count(t.registry, total, kind="timeout") == 2
    assert _count(t.registry, total, kind="http") == 1
    assert _count(t.registry, total, kind="unreachable") == 1
    assert _count(t.registry, total, kind="other") == 0
