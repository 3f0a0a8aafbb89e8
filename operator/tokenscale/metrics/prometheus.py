"""The Prometheus MetricsSource (prometheus-api-client), with every odd answer handled.

Policy, like KEDA's Prometheus scaler, on purpose for each case:
- no series for a query → that field is None, ``problems`` says "no series";
- ``NaN`` (an empty rate window, 0/0) or ``±Inf`` → None, with the reason;
- several series where one is expected cannot happen for grouped queries; the info metric is
  folded per instance (max over engines, then summed);
- stale samples → ``newest_sample_age_s`` is reported and the engine holds past its limit;
- timeout, HTTP 4xx/5xx, unreachable server → the query's fields are None, the reason is kept in
  ``last_error``; a service with no data at all is absent from the result (the engine holds).
All queries of one cycle run concurrently on a bounded pool.
"""

import logging
import math
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from tokenscale.metrics.promql import QueryConfig, queries, running_per_pod
from tokenscale.metrics.source import ServiceKey
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
    "output_tokens_mean": "output_tokens_mean",
    "prompt_tps": "prompt_tps",
    "generation_tps": "generation_tps",
    "prefix_hit_rate": "prefix_cache_hit_rate",
    "preemptions": "preemptions_per_s",
    "spec_decode_acceptance": "spec_decode_acceptance_rate",
}
#: Fields only some engines have (speculative decoding): their absence is not a problem.
OPTIONAL_FIELDS = frozenset({"spec_decode_acceptance_rate"})


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
    series: list[dict[str, Any]] | None
    error: str | None = None


class PrometheusSource:
    """Fleet snapshots from one Prometheus."""

    def __init__(self, cfg: PrometheusConfig) -> None:
        self.cfg = cfg
        self.last_error: str | None = None
        self._pool = ThreadPoolExecutor(max_workers=cfg.concurrency, thread_name_prefix="promql")

    def _client(self, session: requests.Session) -> PrometheusConnect:
        session.verify = self.cfg.ca_file or self.cfg.verify_tls
        headers: dict[str, str] = {}
        if self.cfg.bearer_token_file:  # re-read every cycle: projected tokens rotate
            token = Path(self.cfg.bearer_token_file).read_text().strip()
            headers["Authorization"] = f"Bearer {token}"
        return PrometheusConnect(
            url=self.cfg.url,
            headers=headers,
            session=session,
            disable_ssl=not self.cfg.verify_tls,
            retry=Retry(total=0),  # no retries inside a cycle: the next cycle is the retry
            timeout=math.ceil(self.cfg.timeout_s),
        )

    def _run(self, client: PrometheusConnect, name: str, promql: str) -> _Result:
        try:
            return _Result(name, list(client.custom_query(promql)))
        except PrometheusApiClientException as exc:
            return _Result(name, None, f"{name}: Prometheus answered {str(exc)[:200]}")
        except requests.Timeout:
            return _Result(name, None, f"{name}: timed out after {self.cfg.timeout_s:g} s")
        except requests.ConnectionError as exc:
            if "timed out" in str(exc).lower():  # a read timeout surfaces as ConnectionError
                return _Result(name, None, f"{name}: timed out after {self.cfg.timeout_s:g} s")
            return _Result(name, None, f"{name}: {self.cfg.url} unreachable")
        except (requests.RequestException, ValueError) as exc:
            return _Result(name, None, f"{name}: {type(exc).__name__}: {str(exc)[:200]}")

    def snapshots(self, namespaces: list[str] | None, now_s: float) -> dict[ServiceKey, Snapshot]:
        with requests.Session() as session:
            try:
                client = self._client(session)
            except OSError as exc:
                self.last_error = f"cannot read the bearer token: {exc}"
                return {}
            plan = queries(self.cfg.query, namespaces)
            results = list(self._pool.map(lambda kv: self._run(client, *kv), plan.items()))
        errors = [r.error for r in results if r.error]
        self.last_error = "; ".join(errors[:3]) if errors else None
        if errors:
            log.warning("metrics: %s", self.last_error)
        return _assemble(results, self.cfg.query, now_s)

    def running_by_pod(self, namespaces: list[str] | None) -> dict[ServiceKey, dict[str, float]]:
        """Running requests per pod, per service (empty when unknown: nothing is guessed)."""
        with requests.Session() as session:
            try:
                client = self._client(session)
            except OSError:
                return {}
            result = self._run(
                client, "running_per_pod", running_per_pod(self.cfg.query, namespaces)
            )
        out: dict[ServiceKey, dict[str, float]] = defaultdict(dict)
        for series in result.series or []:
            metric = series.get("metric") or {}
            key, pod = _key(metric, self.cfg.query), metric.get(self.cfg.query.pod_label)
            value, _ = _number(series.get("value"))
            if key is not None and pod and value is not None:
                out[key][pod] = value
        return dict(out)


def _key(metric: dict[str, str], cfg: QueryConfig) -> ServiceKey | None:
    ns, svc = metric.get(cfg.namespace_label), metric.get(cfg.service_label)
    return (ns, svc) if ns and svc else None


def _number(raw: Any) -> tuple[float | None, str | None]:
    try:
        value = float(raw[1])
    except (TypeError, ValueError, IndexError):
        return None, f"unparseable value {raw!r}"
    if math.isnan(value):
        return None, "NaN (no data in the window)"
    if math.isinf(value):
        return None, "Inf"
    return value, None


def _assemble(results: list[_Result], cfg: QueryConfig, now_s: float) -> dict[ServiceKey, Snapshot]:
    by_name = {r.name: r for r in results}
    values: dict[ServiceKey, dict[str, Any]] = defaultdict(dict)
    problems: dict[ServiceKey, list[str]] = defaultdict(list)
    for name, target in FIELDS.items():
        for series in by_name[name].series or []:
            key = _key(series.get("metric", {}), cfg)
            if key is None:
                continue
            value, problem = _number(series.get("value"))
            if problem:
                problems[key].append(f"{target}: {problem}")
            else:
                values[key][target] = value
    counts: dict[ServiceKey, int] = {}
    for series in by_name["replicas"].series or []:
        key = _key(series.get("metric", {}), cfg)
        value, _ = _number(series.get("value"))
        if key is not None and value is not None:
            counts[key] = int(value)
    ages: dict[ServiceKey, float] = {}
    for series in by_name["newest_sample"].series or []:
        key = _key(series.get("metric", {}), cfg)
        value, _ = _number(series.get("value"))
        if key is not None and value is not None:
            ages[key] = max(0.0, now_s - value)
    blocks = _kv_blocks(
        by_name["cache_info"].series or [], by_name["kv_per_instance"].series or [], cfg
    )
    out: dict[ServiceKey, Snapshot] = {}
    for key in set(counts) | set(values):
        fields = dict(values.get(key, {}))
        for name, target in FIELDS.items():
            if target in OPTIONAL_FIELDS and target not in fields:
                continue
            if target not in fields and not any(p.startswith(f"{target}:") for p in problems[key]):
                why = by_name[name].error or "no series"
                problems[key].append(f"{target}: {why}")
        total, free = blocks.get(key, (None, None))
        out[key] = Snapshot(
            at=now_s,
            replicas_reporting=counts.get(key, 0),
            kv_blocks_total=total,
            kv_blocks_free=free,
            newest_sample_age_s=ages.get(key),
            problems=problems[key],
            **fields,
        )
    return out


def _kv_blocks(
    info: list[dict[str, Any]], usage: list[dict[str, Any]], cfg: QueryConfig
) -> dict[ServiceKey, tuple[float | None, float | None]]:
    """Blocks per instance from ``vllm:cache_config_info{num_gpu_blocks=…}`` (max over engines),
    free = blocks × (1 − that instance's KV usage); summed per service."""
    per_instance: dict[tuple[ServiceKey, str], float] = {}
    for series in info:
        metric = series.get("metric", {})
        key = _key(metric, cfg)
        try:
            blocks = float(metric.get("num_gpu_blocks", "nan"))
        except ValueError:
            continue
        if key is None or math.isnan(blocks):
            continue
        where = (key, metric.get(cfg.instance_label, ""))
        per_instance[where] = max(per_instance.get(where, 0.0), blocks)
    used: dict[tuple[ServiceKey, str], float] = {}
    for series in usage:
        metric = series.get("metric", {})
        key = _key(metric, cfg)
        value, _ = _number(series.get("value"))
        if key is not None and value is not None:
            used[(key, metric.get(cfg.instance_label, ""))] = value
    out: dict[ServiceKey, tuple[float | None, float | None]] = {}
    for (key, inst), blocks in per_instance.items():
        total, free = out.get(key, (0.0, 0.0))
        usage_i = used.get((key, inst))
        out[key] = (
            (total or 0.0) + blocks,
            None if free is None or usage_i is None else free + blocks * (1.0 - usage_i),
        )
    return out
