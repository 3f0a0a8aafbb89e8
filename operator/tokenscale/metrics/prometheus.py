"""The Prometheus MetricsSource (the instant-query HTTP API), with every odd answer handled.

Policy, like KEDA's Prometheus scaler, on purpose for each case:
- no series for a query → that field is None, ``problems`` says "no series";
- ``NaN`` (an empty rate window, 0/0) → None, with the reason;
- ``±Inf``, a number that cannot be read, or a value outside the field's range
  (``metrics/bounds.py``: a usage outside [0, 1], a negative count, a rate of 1e308) → None,
  with the reason, counted as a query error of kind ``value``;
- a 200 whose body is not a vector (``"status": "error"``, ``result: null``, a scalar, a
  sample without a label map: ``metrics/answers.py``) → the query's fields are None, counted as
  kind ``answer``;
- several series where one is expected cannot happen for grouped queries; the info metric is
  folded per instance (max over engines, then summed);
- stale samples → ``newest_sample_age_s`` is reported and the engine holds past its limit;
- timeout, HTTP 4xx/5xx, unreachable server → the query's fields are None, the reason is kept in
  ``last_error``; a service with no data at all is absent from the result (the engine holds).
Nothing a server sends raises out of :meth:`PrometheusSource.snapshots`. All queries of one
cycle run concurrently on a bounded pool.
"""

import logging
import math
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from tokenscale.metrics.answers import Sample, judge_vector
from tokenscale.metrics.bounds import in_range, judged, parse_number, sample_value
from tokenscale.metrics.demand import (
    Demand,
    DemandQuery,
    activation_value,
    assemble,
    by_pool,
)
from tokenscale.metrics.lora import lora_readings
from tokenscale.metrics.promql import (
    QueryConfig,
    activation_query,
    gateway_queries,
    queries,
    running_per_pod,
    window_seconds,
)
from tokenscale.metrics.source import QueryError, QueryErrorKind, ServiceKey
from tokenscale.scaling.buckets import BucketCounts
from tokenscale.scaling.snapshot import Snapshot

log = logging.getLogger(__name__)
FIELDS = {
    "waiting": "waiting",
    "waiting_max": "waiting_max_per_replica",
    "running": "running",
    "kv_max": "kv_usage_max",
    "kv_mean": "kv_usage_mean",
    "ttft_p50": "ttft_p50_s",
    "ttft_p95": "ttft_p95_s",
    "ttft_p99": "ttft_p99_s",
    "itl_p99": "itl_p99_s",
    "tpot_p50": "tpot_p50_s",
    "tpot_p99": "tpot_p99_s",
    "tpot_mean": "tpot_mean_s",
    "ttft_mean": "ttft_mean_s",
    "queue_mean": "queue_mean_s",
    "e2e_p99": "e2e_p99_s",
    "queue_p99": "queue_p99_s",
    "request_rate": "request_rate_rps",
    "started_rate": "started_rps",
    "started_rate_recent": "started_rps_recent",
    "output_tokens_mean": "output_tokens_mean",
    "prompt_tps": "prompt_tps",
    "generation_tps": "generation_tps",
    "prefix_hit_rate": "prefix_cache_hit_rate",
    "preemptions": "preemptions_per_s",
    "spec_decode_acceptance": "spec_decode_acceptance_rate",
    "arrivals_mean": "arrivals_per_window_mean",
    "arrivals_allan": "arrivals_per_window_allan",
    "arrival_windows": "arrival_windows",
}
BUCKET_FIELDS = ("ttft_buckets", "tpot_buckets")
"""Queries answered one series per bucket (``le``), read by :func:`_bucket_counts`."""
#: Fields only some engines have (speculative decoding), or that need history a young service
#: lacks (the arrival counts: scaling/dispersion.py says why they are not used): their absence
#: is not a problem.
OPTIONAL_FIELDS = frozenset(
    {
        "spec_decode_acceptance_rate",
        "started_rps_recent",
        "arrivals_per_window_mean",
        "arrivals_per_window_allan",
        "arrival_windows",
    }
)


"""The query-error ``kind`` of a sample whose value is not finite or not plausible."""


@dataclass(frozen=True)
class PrometheusConfig:
    url: str
    bearer_token_file: str | None = None
    ca_file: str | None = None
    verify_tls: bool = True
    timeout_s: float = 5.0
    concurrency: int = 8
    query: QueryConfig = field(default_factory=QueryConfig)


@dataclass
class _Result:
    name: str
    series: list[Sample] | None
    failure: QueryError | None = None

    @property
    def error(self) -> str | None:
        return None if self.failure is None else self.failure.message


class PrometheusSource:
    """Fleet snapshots from one Prometheus."""

    def __init__(self, cfg: PrometheusConfig) -> None:
        self.cfg = cfg
        self.last_error: str | None = None
        self.last_errors: list[QueryError] = []
        """Every failed query and implausible sample of the last read, typed (for the error
        counter; ``last_error``: the first three failed queries, in words)."""
        self._pool = ThreadPoolExecutor(max_workers=cfg.concurrency, thread_name_prefix="promql")

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.cfg.bearer_token_file:  # re-read every cycle: projected tokens rotate
            token = Path(self.cfg.bearer_token_file).read_text().strip()
            headers["Authorization"] = f"Bearer {token}"
        return headers

    def _run(
        self, session: requests.Session, headers: dict[str, str], name: str, promql: str
    ) -> _Result:
        try:
            response = session.get(
                f"{self.cfg.url.rstrip('/')}/api/v1/query",
                params={"query": promql},
                headers=headers,
                timeout=self.cfg.timeout_s,
            )
        except requests.Timeout:
            return _Result(name, None, _timeout(name, self.cfg.timeout_s))
        except requests.ConnectionError as exc:
            if "timed out" in str(exc).lower():  # a read timeout surfaces as ConnectionError
                return _Result(name, None, _timeout(name, self.cfg.timeout_s))
            return _Result(
                name,
                None,
                QueryError(name, QueryErrorKind.UNREACHABLE, f"{name}: {self.cfg.url} unreachable"),
            )
        except (requests.RequestException, ValueError) as exc:
            text = f"{name}: {type(exc).__name__}: {str(exc)[:200]}"
            return _Result(name, None, QueryError(name, QueryErrorKind.OTHER, text))
        if response.status_code != 200:
            text = f"{name}: Prometheus answered HTTP {response.status_code}: {response.text[:200]}"
            return _Result(name, None, QueryError(name, QueryErrorKind.HTTP, text))
        try:
            body = response.json()
        except ValueError:
            text = f"{name}: the answer is not JSON: {response.text[:80]!r}"
            return _Result(name, None, QueryError(name, QueryErrorKind.ANSWER, text))
        judged_answer = judge_vector(name, body)
        if isinstance(judged_answer, QueryError):
            return _Result(name, None, judged_answer)
        return _Result(name, judged_answer)

    def snapshots(
        self, namespaces: list[str] | None, now_s: float, dispersion: bool = False
    ) -> dict[ServiceKey, Snapshot]:
        """Every service's snapshot from one fleet read (``dispersion``: with the arrivals'
        dispersion, :func:`~tokenscale.metrics.promql.queries`)."""
        with requests.Session() as session:
            session.verify = self.cfg.ca_file or self.cfg.verify_tls
            try:
                headers = self._headers()
            except OSError as exc:
                self.last_error = f"cannot read the bearer token: {exc}"
                self.last_errors = [QueryError("*", QueryErrorKind.OTHER, self.last_error)]
                return {}
            plan = queries(self.cfg.query, namespaces, dispersion)
            results = list(
                self._pool.map(lambda kv: self._run(session, headers, *kv), plan.items())
            )
        failed = [r.failure for r in results if r.failure is not None]
        errors = [p.message for p in failed]
        self.last_error = "; ".join(errors[:3]) if errors else None
        if errors:
            log.warning("metrics: %s", self.last_error)
        out, implausible = _assemble(results, self.cfg.query, now_s)
        self.last_errors = failed + implausible
        return out

    def demand(
        self, wanted: dict[ServiceKey, DemandQuery], namespaces: list[str] | None
    ) -> tuple[dict[ServiceKey, Demand], list[QueryError]]:
        """Demand in front of the engines for each wanted service (``metrics/demand.py``): three
        fleet-wide endpoint-picker queries (the queue, its sheddable part, the saturation) when
        any service has a pool, one query per activation query. Never raises for a backend
        failure; failures come back typed."""
        if not wanted:
            return {}, []
        plan: dict[str, str] = {}
        if any(q.pool is not None for q in wanted.values()):
            plan.update(gateway_queries(self.cfg.query, namespaces))
        acts = {k: q.activation for k, q in wanted.items() if q.activation is not None}
        names = {k: f"activation {k[0]}/{k[1]}" for k in acts}
        plan.update({names[k]: activation_query(a) for k, a in acts.items()})
        with requests.Session() as session:
            session.verify = self.cfg.ca_file or self.cfg.verify_tls
            try:
                headers = self._headers()
            except OSError as exc:
                error = f"cannot read the bearer token: {exc}"
                results = [
                    _Result(n, None, QueryError(n, QueryErrorKind.OTHER, error)) for n in plan
                ]
            else:
                results = list(
                    self._pool.map(lambda kv: self._run(session, headers, *kv), plan.items())
                )
        by_name = {r.name: r for r in results}
        queued_r, sat_r = by_name.get("gateway_queued"), by_name.get("pool_saturation")
        queued = (
            by_pool(queued_r.series or [], "gateway_queued", self.cfg.query) if queued_r else {}
        )
        sat = by_pool(sat_r.series or [], "pool_saturation", self.cfg.query) if sat_r else {}
        shed_r = by_name.get("gateway_queued_sheddable")
        shed = (
            by_pool(shed_r.series or [], "gateway_queued_sheddable", self.cfg.query)
            if shed_r is not None and shed_r.error is None
            else None
        )
        gateway_error = next((r.error for r in (queued_r, sat_r) if r and r.error), None)
        activation = {
            k: activation_value(by_name[names[k]].series, by_name[names[k]].error) for k in acts
        }
        failed = [r.failure for r in results if r.failure is not None]
        return assemble(wanted, queued, sat, gateway_error, activation, shed), failed

    def running_by_pod(self, namespaces: list[str] | None) -> dict[ServiceKey, dict[str, float]]:
        """Running requests per pod, per service (empty when unknown: nothing is guessed)."""
        with requests.Session() as session:
            session.verify = self.cfg.ca_file or self.cfg.verify_tls
            try:
                headers = self._headers()
            except OSError:
                return {}
            result = self._run(
                session, headers, "running_per_pod", running_per_pod(self.cfg.query, namespaces)
            )
        out: dict[ServiceKey, dict[str, float]] = defaultdict(dict)
        for series in result.series or []:
            key, pod = (
                _key(series.labels, self.cfg.query),
                series.labels.get(self.cfg.query.pod_label),
            )
            value, _ = judged("running", series.value)
            if key is not None and pod and value is not None:
                out[key[:2]][pod] = value
        return dict(out)


def _timeout(name: str, timeout_s: float) -> QueryError:
    return QueryError(name, QueryErrorKind.TIMEOUT, f"{name}: timed out after {timeout_s:g} s")


_GroupKey = tuple[str, str, str]
"""(namespace, InferenceService, role): the role is "" for a one-pool service's series."""


def _key(metric: dict[str, str], cfg: QueryConfig) -> _GroupKey | None:
    ns, svc = metric.get(cfg.namespace_label), metric.get(cfg.service_label)
    return (ns, svc, metric.get(cfg.role_label, "")) if ns and svc else None


def _by_service(groups: dict[_GroupKey, Snapshot]) -> dict[ServiceKey, Snapshot]:
    """One snapshot per service: a one-pool service's group as it is; a prefill/decode
    service's role groups in ``roles``, its top-level fields the decode pool's (the pool its
    Service selects), else the first role's."""
    out: dict[ServiceKey, Snapshot] = {}
    roles: dict[ServiceKey, dict[str, Snapshot]] = defaultdict(dict)
    for (ns, svc, role), snap in groups.items():
        if role:
            roles[(ns, svc)][role] = snap
        else:
            out[(ns, svc)] = snap
    for key, by_role in roles.items():
        base = out.get(key) or by_role.get("decode") or by_role[sorted(by_role)[0]]
        out[key] = base.model_copy(update={"roles": dict(sorted(by_role.items()))})
    return out


def _assemble(
    results: list[_Result], cfg: QueryConfig, now_s: float
) -> tuple[dict[ServiceKey, Snapshot], list[QueryError]]:
    """The snapshots, and every sample value that was not finite or not plausible."""
    by_name = {r.name: r for r in results}
    values: dict[_GroupKey, dict[str, Any]] = defaultdict(dict)
    problems: dict[_GroupKey, list[str]] = defaultdict(list)
    implausible: list[QueryError] = []

    def note(key: _GroupKey, target: str, problem: str) -> None:
        problems[key].append(f"{target}: {problem}")
        if not problem.startswith("NaN"):  # an empty window is routine, not an error
            where = f"{key[0]}/{key[1]}{'/' + key[2] if key[2] else ''} {target}"
            implausible.append(QueryError(target, QueryErrorKind.VALUE, f"{where}: {problem}"))

    for name, target in FIELDS.items():
        if name not in by_name:  # not asked this read (the dispersion counts: ``queries``)
            continue
        for series in by_name[name].series or []:
            key = _key(series.labels, cfg)
            if key is None:
                continue
            value, problem = judged(target, series.value)
            if problem:
                note(key, target, problem)
            else:
                values[key][target] = value
    counts: dict[_GroupKey, int] = {}
    for series in by_name["replicas"].series or []:
        key = _key(series.labels, cfg)
        if key is None:
            continue
        value, problem = judged("replicas_reporting", series.value)
        if problem:
            note(key, "replicas_reporting", problem)
        elif value is not None:
            counts[key] = int(value)
    ages: dict[_GroupKey, float] = {}
    for series in by_name["newest_sample"].series or []:
        key = _key(series.labels, cfg)
        value, _ = sample_value(series.value)
        if key is not None and value is not None:
            ages[key] = max(0.0, now_s - value)
    for name in BUCKET_FIELDS:
        for key, per_bucket in _bucket_counts(
            by_name[name].series if name in by_name else None, cfg
        ):
            values[key][name] = per_bucket
    blocks = _kv_blocks(
        by_name["cache_info"].series or [], by_name["kv_per_instance"].series or [], cfg, note
    )
    lora = lora_readings(
        by_name["lora_info"].series or [] if "lora_info" in by_name else [], cfg, _key
    )
    out: dict[_GroupKey, Snapshot] = {}
    for key in set(counts) | set(values) | set(problems):
        fields = dict(values.get(key, {}))
        for name, target in FIELDS.items():
            if target in OPTIONAL_FIELDS and target not in fields:
                continue
            if target not in fields and not any(p.startswith(f"{target}:") for p in problems[key]):
                why = by_name[name].error or "no series"
                problems[key].append(f"{target}: {why}")
        total, free = blocks.get(key, (None, None))
        adapters = lora.get(key)
        if adapters is not None:
            fields |= {
                "lora_engines": adapters.engines,
                "lora_waiting_adapters": float(adapters.waiting_adapters),
                "lora_running_adapters": float(adapters.running_adapters),
                "lora_slot_bound_engines": adapters.slot_bound_engines,
            }
        out[key] = Snapshot(
            at=now_s,
            rate_window_s=window_seconds(cfg.rate_window),
            replicas_reporting=counts.get(key, 0),
            kv_blocks_total=total,
            kv_blocks_free=free,
            newest_sample_age_s=ages.get(key),
            problems=problems[key],
            **fields,
        )
    return _by_service(out), implausible


def _bucket_counts(
    series: list[Sample] | None, cfg: QueryConfig
) -> list[tuple[_GroupKey, BucketCounts]]:
    """Each group's per-bucket counts (``sum by (…, le) (increase(…))``), cumulative; a group
    whose buckets cannot all be read (a bound or a count that is not a finite number, no
    ``+Inf`` bucket) is left out: its latency signals fall back on the interpolated quantile."""
    rows: dict[_GroupKey, list[tuple[float, float]]] = defaultdict(list)
    broken: set[_GroupKey] = set()
    for sample in series or []:
        key = _key(sample.labels, cfg)
        if key is None:
            continue
        le, _ = parse_number(sample.labels.get("le", ""))
        if le is None and sample.labels.get("le") in ("+Inf", "Inf", "inf"):
            le = math.inf
        rate, _ = sample_value(sample.value)
        if le is None or rate is None or not math.isfinite(rate) or rate < 0:
            broken.add(key)
            continue
        rows[key].append((le, rate))
    out: list[tuple[_GroupKey, BucketCounts]] = []
    for key, pairs in rows.items():
        pairs.sort()
        if key in broken or not pairs or pairs[-1][0] != math.inf:
            continue
        finite = pairs[:-1]
        out.append(
            (
                key,
                BucketCounts(
                    bounds=tuple(b for b, _ in finite),
                    cumulative=tuple(min(c, pairs[-1][1]) for _, c in finite),
                    total=pairs[-1][1],
                ),
            )
        )
    return out


def _kv_blocks(
    info: list[Sample],
    usage: list[Sample],
    cfg: QueryConfig,
    note: Any,
) -> dict[_GroupKey, tuple[float | None, float | None]]:
    """Blocks per instance from ``vllm:cache_config_info{num_gpu_blocks=…}`` (max over engines),
    free = blocks × (1 − that instance's KV usage); summed per service. A ``num_gpu_blocks``
    that is not a finite count in range (``"Inf"``, ``"1e400"``, negative) is noted, not used."""
    per_instance: dict[tuple[_GroupKey, str], float] = {}
    for series in info:
        key = _key(series.labels, cfg)
        raw = series.labels.get("num_gpu_blocks")
        if key is None or raw is None:
            continue
        blocks, problem = parse_number(raw)
        if blocks is not None:
            blocks, problem = in_range("num_gpu_blocks", blocks)
        if blocks is None:
            note(key, "kv_blocks_total", f"num_gpu_blocks {problem}")
            continue
        where = (key, series.labels.get(cfg.instance_label, ""))
        per_instance[where] = max(per_instance.get(where, 0.0), blocks)
    used: dict[tuple[_GroupKey, str], float] = {}
    for series in usage:
        key = _key(series.labels, cfg)
        value, _ = judged("kv_usage_max", series.value)
        if key is not None and value is not None:
            used[(key, series.labels.get(cfg.instance_label, ""))] = value
    out: dict[_GroupKey, tuple[float | None, float | None]] = {}
    for (key, inst), blocks in per_instance.items():
        total, free = out.get(key, (0.0, 0.0))
        usage_i = used.get((key, inst))
        out[key] = (
            (total or 0.0) + blocks,
            None if free is None or usage_i is None else free + blocks * (1.0 - usage_i),
        )
    return out
