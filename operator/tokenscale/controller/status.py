"""PURE: the status the operator writes, from what it planned, decided and observed.

Every builder returns a typed model of api/status.py; reconcile assembles one
:class:`InferenceServiceStatus` and replaces the status with it whole, so a part that no
longer applies (``live`` without metrics, ``decision`` for an infeasible spec) disappears.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ValidationError

from tokenscale.api.status import (
    CapacityStatus,
    Condition,
    DecisionStatus,
    ForecastStatus,
    InferenceServiceStatus,
    LiveStatus,
    PlanSummary,
    PoolSummary,
    SignalStatus,
)
from tokenscale.planning.result import Plan
from tokenscale.scaling import Decision, ScalingState, Snapshot

ConditionStatus = Literal["True", "False", "Unknown"]


@dataclass(frozen=True)
class Observed:
    """What the Deployment says about itself (None: it does not exist)."""

    replicas: int
    ready_replicas: int
    available_replicas: int
    available: bool
    available_message: str = field(compare=False)
    """The workload controller's words (the Available condition's message): not compared, so
    that its first report on a new workload, which changes nothing counted, wakes no
    reconcile."""


def observe_deployment(live: dict[str, Any] | None) -> Observed | None:
    if live is None:
        return None
    status = live.get("status") or {}
    available = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Available"), None
    )
    return Observed(
        replicas=int((live.get("spec") or {}).get("replicas") or 0),
        ready_replicas=int(status.get("readyReplicas") or 0),
        available_replicas=int(status.get("availableReplicas") or 0),
        available=bool(available and available.get("status") == "True"),
        available_message=(available or {}).get("message", "no Available condition yet"),
    )


def read_status(raw: Any) -> tuple[InferenceServiceStatus, list[str]]:
    """The status as the last reconcile wrote it, typed. The status subresource is writable by
    others: a part that does not validate is dropped (named in the returned problems), the
    rest kept."""
    if not isinstance(raw, dict):
        return InferenceServiceStatus(), [] if raw is None else ["status is not an object"]
    try:
        return InferenceServiceStatus.model_validate(raw), []
    except ValidationError:
        pass
    kept: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        try:
            InferenceServiceStatus.model_validate({key: value})
        except ValidationError as err:
            problems.append(f"status.{key}: {err.errors()[0]['msg']}: dropped")
        else:
            kept[key] = value
    return InferenceServiceStatus.model_validate(kept), problems


def memory_of(status: InferenceServiceStatus) -> ScalingState:
    """The engine's memory (``status.scaling``, with the top-level ``decidedReplicas``)."""
    state = status.scaling or ScalingState()
    return state.model_copy(update={"decided_replicas": status.decided_replicas})


def rfc3339(t_s: float) -> str:
    """Unix seconds as RFC 3339 UTC with milliseconds (``2026-01-01T00:00:00.250Z``)."""
    stamp = datetime.fromtimestamp(t_s, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return stamp[:-3] + "Z"


def condition(
    previous: list[Condition],
    ctype: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    now: str,
    generation: int | None,
) -> Condition:
    """A condition; its lastTransitionTime moves only when its status changes."""
    old = next((c for c in previous if c.type == ctype), None)
    since = old.last_transition_time if old is not None and old.status == status else now
    return Condition(
        type=ctype,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=since,
        observed_generation=generation,
    )


def plan_summary(plan: Plan, ttft_slo: float | None, tpot_slo: float | None) -> PlanSummary:
    r = plan.sized
    return PlanSummary(
        feasible=plan.feasible,
        tensor_parallel_size=plan.tensor_parallel_size,
        replicas=r.total,
        binding_constraint=plan.binding_constraint,
        throughput_replicas=round(r.throughput, 4),
        concurrency_replicas=round(r.concurrency, 4),
        kv_replicas=round(r.kv, 4),
        kv_capacity_tokens_per_replica=plan.kv_capacity_tokens_per_replica,
        max_concurrency_per_replica=plan.max_concurrency_per_replica,
        max_model_len=plan.max_model_len,
        ttft_p99_estimate_seconds=round(plan.ttft_p99_estimate_s, 6),
        tpot_estimate_seconds=round(plan.tpot_estimate_s, 6),
        ttft_p99_slo_seconds=ttft_slo,
        tpot_p99_slo_seconds=tpot_slo,
        output_tps_per_replica=round(plan.output_tps_per_replica, 3),
        gpus_total=plan.gpus_total
        if plan.gpus_total is not None
        else r.total * plan.gpus_per_replica,
        cost_per_million_output_tokens=(
            round(plan.cost_per_million_output_tokens, 6)
            if plan.cost_per_million_output_tokens is not None
            else None
        ),
        cost_per_hour=(round(plan.cost_per_hour, 4) if plan.cost_per_hour is not None else None),
        reasons=plan.infeasible_reasons,
        warnings=plan.warnings,
        sources=plan.sources,
        speculative=plan.speculative.reason if plan.speculative is not None else None,
        lora=(
            f"{plan.lora.summary}; {plan.lora.max_loras_reason}" if plan.lora is not None else None
        ),
        pools=pool_summaries(plan),
        coordination=plan.coordination.rule if plan.coordination is not None else None,
        classes=class_lines(plan),
    )


def class_lines(plan: Plan) -> list[str]:
    """``status.plan.classes``: the summary's reason, then one line per class."""
    s = plan.classes_summary
    if s is None:
        return []
    lines = [s.reason]
    for c in plan.classes:
        checks = ", ".join(
            f"{x.name} {x.estimate_s:.3g}s/{x.target_s:.3g}s {'met' if x.met else 'MISSED'}"
            for x in c.slo_checks
        )
        served = (
            "guaranteed"
            if c.guaranteed
            else f"served {c.served_fraction_at_peak:.0%} at the guaranteed peak, "
            f"{c.served_fraction_at_mean:.0%} at their mean"
        )
        lines.append(
            f"{c.name} ({c.tier}, priority {c.priority}): {checks or 'no SLO'}; {served}; "
            f"{c.gpus:.2f} GPUs"
        )
    return lines


def pool_summaries(plan: Plan) -> list[PoolSummary]:
    """The plan's pools in brief, for ``status.plan.pools``."""
    return [
        PoolSummary(
            name=x.name,
            role=x.role,
            gpu=x.variant.gpu,
            gpus_per_replica=x.variant.gpus_per_replica,
            replicas=x.replicas,
            gpus=x.gpus,
            ttft_p99_estimate_seconds=round(x.ttft_p99_s, 6) if x.ttft_p99_s is not None else None,
            tpot_p99_estimate_seconds=round(x.tpot_p99_s, 6) if x.tpot_p99_s is not None else None,
            binding_constraint=x.binding_constraint,
        )
        for x in plan.pools
    ]


def ready_condition(
    previous: list[Condition],
    plan_ok: bool,
    observed: Observed | None,
    now: str,
    generation: int | None,
) -> Condition:
    if not plan_ok:
        return condition(
            previous,
            "Ready",
            "False",
            "PlanNotFeasible",
            "see the PlanFeasible condition",
            now,
            generation,
        )
    if observed is None:
        return condition(
            previous,
            "Ready",
            "False",
            "DeploymentMissing",
            "the Deployment does not exist yet",
            now,
            generation,
        )
    if not observed.available:
        return condition(
            previous,
            "Ready",
            "False",
            "DeploymentUnavailable",
            f"{observed.ready_replicas}/{observed.replicas} replicas ready",
            now,
            generation,
        )
    return condition(
        previous,
        "Ready",
        "True",
        "Serving",
        f"{observed.ready_replicas}/{observed.replicas} replicas ready",
        now,
        generation,
    )


def deployment_condition(
    previous: list[Condition], observed: Observed | None, now: str, generation: int | None
) -> Condition:
    if observed is None:
        return condition(
            previous,
            "DeploymentAvailable",
            "False",
            "NotCreated",
            "no Deployment (the plan is not feasible or not applied yet)",
            now,
            generation,
        )
    if observed.available:
        return condition(
            previous,
            "DeploymentAvailable",
            "True",
            "MinimumReplicasAvailable",
            observed.available_message,
            now,
            generation,
        )
    return condition(
        previous,
        "DeploymentAvailable",
        "False",
        "ReplicasUnavailable",
        # not the workload controller's message: its first report ("does not have minimum
        # availability") would cost a second status write that tells a reader nothing new
        f"{observed.available_replicas}/{observed.replicas} available",
        now,
        generation,
    )


def metrics_condition(
    previous: list[Condition],
    now: str,
    generation: int | None,
    decision: Decision | None = None,
) -> Condition:
    """True when the decision rests on fresh metrics; False with the reason otherwise."""
    if decision is None:
        return condition(
            previous,
            "MetricsAvailable",
            "False",
            "NoMetricsSource",
            "no Prometheus configured: replicas follow the forecast plan",
            now,
            generation,
        )
    if decision.metrics_available:
        return condition(
            previous,
            "MetricsAvailable",
            "True",
            "MetricsFresh",
            "decisions use live vLLM metrics",
            now,
            generation,
        )
    return condition(
        previous,
        "MetricsAvailable",
        "False",
        "MetricsUnavailable",
        f"{decision.metrics_reason}: holding replicas (never scaling down blind)",
        now,
        generation,
    )


def live_status(snap: Snapshot, at: str) -> LiveStatus:
    return LiveStatus(
        at=at,
        replicas_reporting=snap.replicas_reporting,
        waiting=snap.waiting,
        running=snap.running,
        kv_usage=snap.kv_usage_max,
        kv_usage_mean=snap.kv_usage_mean,
        kv_blocks_total=snap.kv_blocks_total,
        kv_blocks_free=snap.kv_blocks_free,
        ttft_p50_seconds=snap.ttft_p50_s,
        ttft_p99_seconds=snap.ttft_p99_s,
        tpot_p99_seconds=snap.tpot_p99_s,
        itl_p99_seconds=snap.itl_p99_s,
        e2e_p99_seconds=snap.e2e_p99_s,
        queue_p99_seconds=snap.queue_p99_s,
        observed_rps=snap.arrival_rps,
        prompt_tps=snap.prompt_tps,
        generation_tps=snap.generation_tps,
        output_tps_per_replica=snap.output_tps_per_replica,
        prefix_cache_hit_rate=snap.prefix_cache_hit_rate,
        preemptions_per_second=snap.preemptions_per_s,
        spec_decode_acceptance_rate=snap.spec_decode_acceptance_rate,
        sample_age_seconds=snap.newest_sample_age_s,
        gateway_queued=snap.gateway_queued,
        pool_saturation=snap.pool_saturation,
        activation_demand=snap.activation_demand,
    )


def decision_status(decision: Decision, observed_at_s: float | None = None) -> DecisionStatus:
    return DecisionStatus(
        replicas=decision.replicas,
        source=decision.source,
        reason=decision.reason,
        cause=decision.cause.value,
        observed_at=None if observed_at_s is None else rfc3339(observed_at_s),
        model_replicas=decision.model_replicas,
        calibration=decision.calibration,
        prefill_calibration=decision.prefill_calibration,
        slo_headroom=decision.state.slo_headroom if decision.source == "metrics" else None,
        signals=[
            SignalStatus(
                name=s.name,
                value=s.value,
                high=s.high,
                low=s.low,
                level=s.level,
                replicas=s.replicas,
                over_slo_low=s.over_slo_low,
                over_slo_high=s.over_slo_high,
                error_budget=s.error_budget,
                tokens=s.tokens,
                tokens_per_second=s.tokens_per_s,
                capacity_tokens=s.capacity_tokens,
                basis=s.basis,
            )
            for s in decision.signals
        ],
        capacity=(
            None
            if decision.capacity is None
            else CapacityStatus(
                rps_per_replica=decision.capacity.rps_per_replica,
                source=decision.capacity.source,
                planner_rps_per_replica=decision.capacity.planner_rps_per_replica,
                observed_rps_per_replica=decision.capacity.observed_rps_per_replica,
                occupancy=decision.capacity.occupancy,
                reason=decision.capacity.reason,
            )
        ),
        forecast=(
            None
            if decision.outlook is None
            else ForecastStatus(
                observed_rps=decision.outlook.observed_rps,
                expected_rps=decision.outlook.expected_rps,
                horizon_seconds=decision.outlook.horizon_s,
                lead_time_seconds=decision.outlook.lead_time_s,
                lead_time_measured=decision.outlook.lead_time_measured,
                burst_headroom=decision.outlook.burst_headroom,
                replicas=decision.outlook.replicas,
            )
        ),
    )


def ttft_display(live: LiveStatus | None, plan: PlanSummary | None) -> str | None:
    """The TTFT P99 column: the live value when metrics have one, else the estimate, with the
    unit and where it comes from."""
    if live is not None and live.ttft_p99_seconds is not None:
        return f"{_seconds(live.ttft_p99_seconds)} live"
    if plan is not None:
        return f"{_seconds(plan.ttft_p99_estimate_seconds)} estimate"
    return None


def _seconds(value: float) -> str:
    return f"{value * 1e3:.0f}ms" if value < 1 else f"{value:.2f}s"


def status_document(status: InferenceServiceStatus) -> dict[str, Any]:
    """The status as the API stores it (camelCase; absent, not null, when unknown)."""
    return status.model_dump(by_alias=True, exclude_none=True)
