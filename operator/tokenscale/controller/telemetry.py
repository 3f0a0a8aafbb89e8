"""The operator's own metrics (prometheus-client), served on ``--metrics-port``.

Per InferenceService (labels ``namespace`` and ``inferenceservice``, the value its pods carry
in ``tokenscale.io/inferenceservice``: the name, or the derived value when the name is not a
valid label value, so these series join the vLLM series by the same label): desired replicas per
constraint and in total, actual and ready replicas, the binding constraint, scale events by
direction and source, decisions held for missing metrics, observed vs SLO TTFT/TPOT P99, KV
usage, cost per 1M output tokens. Operator-wide: reconcile and evaluation duration
histograms, reconciles run and skipped by trigger, the operator's API requests by method and
status, Prometheus query errors by kind. Base units, ``_total`` counters.
"""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from tokenscale.metrics.source import QueryError
from tokenscale.planning.result import Plan
from tokenscale.render.names import label_value
from tokenscale.scaling import Decision, Snapshot
from tokenscale.scaling.cause import Cause

SERVICE = ("namespace", "inferenceservice")
CONSTRAINTS = ("throughput", "concurrency", "kv", "none")


class Telemetry:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.desired = Gauge(
            "tokenscale_replicas_desired",
            "Replicas each constraint needs (unrounded) and the decided total",
            (*SERVICE, "constraint"),
            registry=r,
        )
        self.replicas = Gauge(
            "tokenscale_replicas",
            "Replicas of the vLLM Deployment",
            (*SERVICE, "state"),
            registry=r,
        )
        self.binding = Gauge(
            "tokenscale_binding_constraint_info",
            "1 for the constraint that binds the plan",
            (*SERVICE, "constraint"),
            registry=r,
        )
        self.scale_events = Counter(
            "tokenscale_scale_events",
            "Replica changes decided, by direction, source and cause",
            (*SERVICE, "direction", "source", "cause"),
            registry=r,
        )
        self.held = Counter(
            "tokenscale_decisions_held",
            "Decisions that held replicas because metrics were missing or stale",
            SERVICE,
            registry=r,
        )
        self.reconcile_seconds = Histogram(
            "tokenscale_reconcile_duration_seconds",
            "One reconcile of one InferenceService",
            registry=r,
        )
        self.reconciles = Counter(
            "tokenscale_reconciles",
            "Reconciles run, by what woke them (create, update, owned, tick)",
            ("trigger",),
            registry=r,
        )
        self.skipped = Counter(
            "tokenscale_reconciles_skipped",
            "Wake-ups that needed no reconcile: nothing the last one read had changed",
            ("trigger",),
            registry=r,
        )
        self.status_writes = Counter(
            "tokenscale_status_writes",
            "Reconciles by what they did with the status: written (a reader acts on the "
            "change), held (kept in memory: nothing a reader acts on changed), same",
            ("result",),
            registry=r,
        )
        self.api_requests = Counter(
            "tokenscale_api_requests",
            "The operator's own requests to the Kubernetes API (Kopf's watches and annotation "
            "patches not included), by HTTP method and status; each 429 retry counts",
            ("method", "code"),
            registry=r,
        )
        self.evaluation_seconds = Histogram(
            "tokenscale_evaluation_duration_seconds",
            "One resync cycle over every InferenceService",
            registry=r,
        )
        self.query_errors = Counter(
            "tokenscale_prometheus_query_errors",
            "Failed PromQL queries and implausible samples, by kind",
            ("kind",),
            registry=r,
        )
        self.latency = Gauge(
            "tokenscale_latency_p99_seconds",
            "TTFT and TPOT P99: observed, SLO and planned estimate",
            (*SERVICE, "metric", "source"),
            registry=r,
        )
        self.kv_usage = Gauge(
            "tokenscale_kv_cache_usage_ratio",
            "KV cache usage, max over replicas (0–1)",
            SERVICE,
            registry=r,
        )
        self.cost = Gauge(
            "tokenscale_cost_per_million_output_tokens",
            "Planned cost per 1M output tokens (currency of spec.cost)",
            SERVICE,
            registry=r,
        )

    def serve(self, port: int, address: str = "0.0.0.0") -> None:
        start_http_server(port, addr=address, registry=self.registry)

    def record(
        self,
        ns: str,
        name: str,
        plan: Plan,
        decision: Decision,
        previous: int | None,
        snapshot: Snapshot | None,
        actual: int,
        ready: int,
    ) -> None:
        """``previous``: the workload's replicas before a new decision (None: the stored
        decision was re-applied, or no workload existed); a change counts as a scale event."""
        svc = (ns, label_value(name))
        r = plan.sized
        for constraint, value in (
            ("throughput", r.throughput),
            ("concurrency", r.concurrency),
            ("kv", r.kv),
            ("total", float(decision.replicas)),
        ):
            self.desired.labels(*svc, constraint).set(value)
        self.replicas.labels(*svc, "actual").set(actual)
        self.replicas.labels(*svc, "ready").set(ready)
        for constraint in CONSTRAINTS:
            self.binding.labels(*svc, constraint).set(
                1.0 if constraint == plan.binding_constraint else 0.0
            )
        if previous is not None and previous != decision.replicas:
            direction = "up" if decision.replicas > previous else "down"
            labels = (*svc, direction, decision.source, decision.cause.value)
            self.scale_events.labels(*labels).inc()
        if previous is not None and decision.cause is Cause.BLIND:
            self.held.labels(*svc).inc()
        self.latency.labels(*svc, "ttft", "estimate").set(plan.ttft_p99_estimate_s)
        self.latency.labels(*svc, "tpot", "estimate").set(plan.tpot_estimate_s)
        for metric, target in (
            ("ttft", plan_slo(plan, "ttft_p99")),
            ("tpot", plan_slo(plan, "tpot_p99")),
        ):
            if target is not None:
                self.latency.labels(*svc, metric, "slo").set(target)
        if snapshot is not None:
            for kind, seen in (("ttft", snapshot.ttft_p99_s), ("tpot", snapshot.tpot_p99_s)):
                if seen is not None:
                    self.latency.labels(*svc, kind, "observed").set(seen)
            if snapshot.kv_usage_max is not None:
                self.kv_usage.labels(*svc).set(snapshot.kv_usage_max)
        if plan.cost_per_million_output_tokens is not None:
            self.cost.labels(*svc).set(plan.cost_per_million_output_tokens)

    def record_request(self, method: str, status: int) -> None:
        self.api_requests.labels(method, str(status)).inc()

    def record_query_errors(self, errors: list[QueryError]) -> None:
        """One count per failed query or implausible sample of the last read, by its typed kind
        (``timeout``, ``unreachable``, ``http``, ``answer``: a 200 that is not a vector,
        ``value``: a sample not finite or out of range, ``other``)."""
        for error in errors:
            self.query_errors.labels(error.kind.value).inc()


def plan_slo(plan: Plan, name: str) -> float | None:
    return next((c.target_s for c in plan.slo_checks if c.name == name), None)
