"""Every PromQL query the operator runs, in one place (vLLM 0.33 names; legacy fallbacks).

Queries are fleet-wide and grouped ``by (<namespace label>, <service label>, <role label>)``
so one evaluation cycle costs the same 31 queries for 1 or 1,000 InferenceServices
(``queries`` and the per-pod running read; 3 more while a service sizes for its arrivals'
dispersion, plus ``gateway_queries`` for the demand). The role
label (``role``, which the PodMonitor copies from the pod label ``llm-d.ai/role``) is absent on
a one-pool service's series (one group) and splits a prefill/decode service in two groups.
Gauges are read with ``last_over_time(…[gauge window])`` (a missed scrape is not a gap); rates
and quantiles over the rate window. Renamed metrics fall back with ``or``:
``vllm:gpu_cache_usage_perc`` (before 0.12) and ``vllm:time_per_output_token_seconds`` (before
0.13). Quantiles follow vLLM's own dashboard:
``histogram_quantile(q, sum by (le) (rate(…_bucket[w])))``; the TTFT and TPOT buckets are
also read whole as counts (``sum by (…, le) (increase(…_bucket[w]))``, one series per bucket)
so the engine reads the share of requests over each SLO as the buckets bound it, and how many
requests that share is of (``scaling/buckets.py``).
The metric names come from ``catalog/vllm_metrics.py``.
"""

import re
from dataclasses import dataclass

from tokenscale.catalog import vllm_metrics as v
from tokenscale.scaling.dispersion import COUNT_WINDOW_S, DISPERSION_RANGE_S


@dataclass(frozen=True)
class QueryConfig:
    namespace_label: str = "namespace"
    service_label: str = "inferenceservice"
    instance_label: str = "instance"
    pod_label: str = "pod"
    role_label: str = "role"
    gauge_window: str = "1m"
    rate_window: str = "2m"
    count_window_s: int = int(COUNT_WINDOW_S)
    """One arrival count of the dispersion statistic (the engine's COUNT_WINDOW_S)."""
    dispersion_range_s: int = int(DISPERSION_RANGE_S)
    """The counts' history (the engine's DISPERSION_RANGE_S)."""
    pool_label: str = "inference_pool"
    """The endpoint picker's label naming the InferencePool on its flow-control metrics."""


_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w)")


def _milliseconds(duration: str) -> int:
    parts = _DURATION.findall(duration)
    if not parts or "".join(n + u for n, u in parts) != duration:
        raise ValueError(f"not a Prometheus duration: {duration!r}")
    return sum(int(n) * _UNIT_MS[u] for n, u in parts)


def half_window(duration: str) -> str:
    """Half a Prometheus duration (``2m`` → ``60000ms``), in milliseconds."""
    return f"{max(1, _milliseconds(duration) // 2)}ms"


def window_seconds(duration: str) -> float | None:
    """A Prometheus duration in seconds (``2m`` → 120.0); None where this module cannot read
    it (Prometheus judges such a window in the queries)."""
    try:
        return _milliseconds(duration) / 1000.0
    except ValueError:
        return None


def _half_or_whole(duration: str) -> str:
    """Half the window, or the window itself where it is not a duration this module reads
    (Prometheus then judges it, as it judges every other query's window)."""
    try:
        return half_window(duration)
    except ValueError:
        return duration


def selector(cfg: QueryConfig, namespaces: list[str] | None) -> str:
    parts = [f'{cfg.service_label}!=""']
    if namespaces:
        parts.append(f'{cfg.namespace_label}=~"{"|".join(namespaces)}"')
    return "{" + ",".join(parts) + "}"


def queries(
    cfg: QueryConfig, namespaces: list[str] | None, dispersion: bool = False
) -> dict[str, str]:
    """The fleet read, one query per signal for every service at once. ``dispersion``: also
    the arrivals' dispersion (:func:`arrival_count_queries`, three 30-minute subqueries), read
    only while some service turns ``spec.scaling.policy.dispersionSizing`` on."""
    s = selector(cfg, namespaces)
    g = f"{cfg.namespace_label}, {cfg.service_label}, {cfg.role_label}"
    gw, rw = cfg.gauge_window, cfg.rate_window

    def gauge(metric: str, agg: str = "sum") -> str:
        return f"{agg} by ({g}) (last_over_time({metric}{s}[{gw}]))"

    def rate(metric: str) -> str:
        return f"sum by ({g}) (rate({metric}{s}[{rw}]))"

    def buckets(metric: str) -> str:
        return f"sum by ({g}, le) (rate({metric}_bucket{s}[{rw}]))"

    def counts(metric: str) -> str:
        return f"sum by ({g}, le) (increase({metric}_bucket{s}[{rw}]))"

    def quantile(q: float, metric: str) -> str:
        return f"histogram_quantile({q}, {buckets(metric)})"

    kv_new, kv_old = v.KV_CACHE_USAGE, v.KV_CACHE_USAGE_LEGACY
    tpot_new = v.REQUEST_TIME_PER_OUTPUT_TOKEN
    tpot_old = v.TIME_PER_OUTPUT_TOKEN_LEGACY
    per_instance_waiting = (
        f"sum by ({g}, {cfg.instance_label}) (last_over_time({v.NUM_REQUESTS_WAITING}{s}[{gw}]))"
    )
    return {
        "replicas": f"count by ({g}) (last_over_time({v.NUM_REQUESTS_RUNNING}{s}[{gw}]))",
        "waiting": gauge(v.NUM_REQUESTS_WAITING),
        "waiting_max": f"max by ({g}) ({per_instance_waiting})",
        "running": gauge(v.NUM_REQUESTS_RUNNING),
        "kv_max": f"{gauge(kv_new, 'max')} or {gauge(kv_old, 'max')}",
        "kv_mean": f"{gauge(kv_new, 'avg')} or {gauge(kv_old, 'avg')}",
        "kv_per_instance": (
            f"max by ({g}, {cfg.instance_label}) (last_over_time({kv_new}{s}[{gw}])) or "
            f"max by ({g}, {cfg.instance_label}) (last_over_time({kv_old}{s}[{gw}]))"
        ),
        "cache_info": f"last_over_time({v.CACHE_CONFIG_INFO}{s}[{gw}])",
        "ttft_p50": quantile(0.5, v.TIME_TO_FIRST_TOKEN),
        "ttft_p95": quantile(0.95, v.TIME_TO_FIRST_TOKEN),
        "ttft_p99": quantile(0.99, v.TIME_TO_FIRST_TOKEN),
        "itl_p99": quantile(0.99, v.INTER_TOKEN_LATENCY),
        "tpot_p50": f"{quantile(0.5, tpot_new)} or {quantile(0.5, tpot_old)}",
        "tpot_p99": f"{quantile(0.99, tpot_new)} or {quantile(0.99, tpot_old)}",
        # exact, not bucketed: what calibration compares with the model
        "tpot_mean": f"{rate(tpot_new + '_sum')} / {rate(tpot_new + '_count')}",
        # TTFT = queue + prefill phase: their exact means calibrate prefill
        "ttft_mean": f"{rate(v.TIME_TO_FIRST_TOKEN + '_sum')} / "
        f"{rate(v.TIME_TO_FIRST_TOKEN + '_count')}",
        "queue_mean": f"{rate(v.REQUEST_QUEUE_TIME + '_sum')} / "
        f"{rate(v.REQUEST_QUEUE_TIME + '_count')}",
        # per bucket: the share of requests over each SLO, as a range (scaling/buckets.py)
        "ttft_buckets": counts(v.TIME_TO_FIRST_TOKEN),
        "tpot_buckets": f"{counts(tpot_new)} or {counts(tpot_old)}",
        "e2e_p99": quantile(0.99, v.E2E_REQUEST_LATENCY),
        "queue_p99": quantile(0.99, v.REQUEST_QUEUE_TIME),
        "request_rate": rate(v.REQUEST_SUCCESS),
        # requests reaching their first token: arrivals without the E2E lag of finishing
        "started_rate": rate(v.TIME_TO_FIRST_TOKEN + "_count"),
        # the same over half the rate window (1m at the default 2m): scaling/need.py reads
        # the larger of the two, so a step up shows within a minute
        "started_rate_recent": f"sum by ({g}) "
        f"(rate({v.TIME_TO_FIRST_TOKEN}_count{s}[{_half_or_whole(rw)}]))",
        "output_tokens_mean": f"{rate(v.REQUEST_GENERATION_TOKENS + '_sum')} / "
        f"{rate(v.REQUEST_GENERATION_TOKENS + '_count')}",
        "prompt_tps": rate(v.PROMPT_TOKENS),
        "generation_tps": rate(v.GENERATION_TOKENS),
        "prefix_hit_rate": (f"{rate(v.PREFIX_CACHE_HITS)} / {rate(v.PREFIX_CACHE_QUERIES)}"),
        "preemptions": rate(v.NUM_PREEMPTIONS),
        # speculative decoding: accepted ÷ drafted tokens (vLLM's own acceptance rate)
        "spec_decode_acceptance": f"{rate(v.SPEC_DECODE_NUM_ACCEPTED_TOKENS)} / "
        f"{rate(v.SPEC_DECODE_NUM_DRAFT_TOKENS)}",
        # LoRA: every engine's adapter series over the gauge window (metrics/lora.py picks
        # each engine's newest)
        "lora_info": f"last_over_time({v.LORA_REQUESTS_INFO}{s}[{gw}])",
        "newest_sample": f"max by ({g}) (timestamp({v.NUM_REQUESTS_RUNNING}{s}))",
        **(arrival_count_queries(cfg, namespaces) if dispersion else {}),
    }


def arrival_count_queries(cfg: QueryConfig, namespaces: list[str] | None) -> dict[str, str]:
    """The arrivals' dispersion at scrape resolution (``scaling/dispersion.py``): requests
    reaching their first token counted per ``count_window`` at steps of ``count_window`` over
    ``dispersion_range`` (a subquery). A window's count is each engine's counter increase over
    the window (``x - x offset w``, never below 0: a restarted engine's reset counts nothing,
    an engine younger than the window is left out), summed per service; the Allan term is the
    squared difference of two successive windows' counts. Three answers: the windows' mean
    count, the Allan variance (half the mean squared difference) and how many differences it
    averages."""
    s = selector(cfg, namespaces)
    g = f"{cfg.namespace_label}, {cfg.service_label}, {cfg.role_label}"
    step = cfg.count_window_s
    w, r = f"{step}s", f"{cfg.dispersion_range_s}s"
    x = f"{v.TIME_TO_FIRST_TOKEN}_count{s}"

    def count(ago_s: int) -> str:
        now = x if ago_s == 0 else f"{x} offset {ago_s}s"
        return f"sum by ({g}) (clamp_min({now} - {x} offset {ago_s + step}s, 0))"

    window, previous = count(0), count(step)
    return {
        "arrivals_mean": f"avg_over_time(({window})[{r}:{w}])",
        "arrivals_allan": f"avg_over_time((({window} - {previous}) ^ 2)[{r}:{w}]) / 2",
        "arrival_windows": f"count_over_time(({window} - {previous})[{r}:{w}])",
    }


#: The endpoint picker's flow-control gauges, newest name first: llm-d's router exports the
#: ``llm_d_epp_`` names and still the deprecated ``inference_extension_`` ones of the Gateway
#: API Inference Extension (``pkg/epp/metrics``), labelled ``inference_pool``.
EPP_QUEUE_SIZE = (
    "llm_d_epp_flow_control_queue_size",
    "inference_extension_flow_control_queue_size",
)
EPP_POOL_SATURATION = (
    "llm_d_epp_flow_control_pool_saturation",
    "inference_extension_flow_control_pool_saturation",
)


def gateway_queries(cfg: QueryConfig, namespaces: list[str] | None) -> dict[str, str]:
    """The endpoint picker's queue (requests held by flow control, summed over fairness ids
    and priorities), the part of it at a negative ``priority`` (sheddable classes), and its
    pool saturation (max over stages: llm-d's ``effective`` stage is already the max), grouped
    by namespace and pool, for every pool at once."""
    parts = [f'{cfg.pool_label}!=""']
    if namespaces:
        parts.append(f'{cfg.namespace_label}=~"{"|".join(namespaces)}"')
    s = "{" + ",".join(parts) + "}"
    shed = "{" + ",".join([*parts, 'priority=~"-[0-9]+"']) + "}"
    g = f"{cfg.namespace_label}, {cfg.pool_label}"
    gw = cfg.gauge_window

    def either(agg: str, names: tuple[str, str], sel: str = s) -> str:
        return " or ".join(f"{agg} by ({g}) (last_over_time({n}{sel}[{gw}]))" for n in names)

    return {
        "gateway_queued": either("sum", EPP_QUEUE_SIZE),
        "gateway_queued_sheddable": either("sum", EPP_QUEUE_SIZE, shed),
        "pool_saturation": either("max", EPP_POOL_SATURATION),
    }


def activation_query(user_query: str) -> str:
    """``spec.scaling.activation.query`` summed over its series (one number per service)."""
    return f"sum({user_query})"


def running_per_pod(cfg: QueryConfig, namespaces: list[str] | None) -> str:
    """Running requests of each pod (the ``pod`` label the PodMonitor attaches): which replicas
    have the least work and should go first on a scale-down."""
    s = selector(cfg, namespaces)
    g = f"{cfg.namespace_label}, {cfg.service_label}, {cfg.pod_label}"
    return f"sum by ({g}) (last_over_time(vllm:num_requests_running{s}[{cfg.gauge_window}]))"


#: Alert thresholds of :func:`alert_rules` (the chart's PrometheusRule spells the same numbers).
KV_EXHAUSTED_USAGE = 0.98
ERROR_RATIO = 0.05


def alert_rules(
    cfg: QueryConfig, rate_window: str = "5m", for_duration: str = "5m"
) -> list[dict[str, object]]:
    """The alerting rules the chart installs (``prometheusRules.enabled``): an engine that stops
    answering scrapes (a CUDA OOM or any crash), KV exhausted with requests waiting, requests
    finishing aborted or in error, and preemptions. Grouped by namespace and service; the
    chart's template must render exactly these (tests/unit/test_readiness.py compares)."""
    g = f"{cfg.namespace_label}, {cfg.service_label}"
    s = f'{cfg.service_label}!=""'
    rw = rate_window
    kv = (
        f"max by ({g}) ({v.KV_CACHE_USAGE}{{{s}}} or {v.KV_CACHE_USAGE_LEGACY}{{{s}}}) "
        f">= {KV_EXHAUSTED_USAGE:g} and on ({g}) sum by ({g}) ({v.NUM_REQUESTS_WAITING}{{{s}}}) "
        "> 0"
    )
    errors = (
        f'sum by ({g}) (rate({v.REQUEST_SUCCESS}{{{s},finished_reason=~"abort|error"}}[{rw}])) '
        f"/ sum by ({g}) (rate({v.REQUEST_SUCCESS}{{{s}}}[{rw}])) > {ERROR_RATIO:g}"
    )
    preempt = f"sum by ({g}) (rate({v.NUM_PREEMPTIONS}{{{s}}}[{rw}])) > 0"
    down = f"up{{{s}}} == 0"

    def rule(name: str, expr: str, severity: str, summary: str) -> dict[str, object]:
        return {
            "alert": name,
            "expr": expr,
            "for": for_duration,
            "labels": {"severity": severity},
            "annotations": {"summary": summary},
        }

    return [
        rule(
            "TokenscaleVllmEngineDown",
            down,
            "critical",
            "A vLLM engine stopped answering scrapes: crashed (a CUDA OOM kills the engine), "
            "restarting or unreachable.",
        ),
        rule(
            "TokenscaleVllmKvCacheExhausted",
            kv,
            "warning",
            "KV cache full with requests waiting: admission stalls, TTFT rises, preemption "
            "follows.",
        ),
        rule(
            "TokenscaleVllmRequestErrors",
            errors,
            "warning",
            "More than 5% of finished requests were aborted or failed (rejections, errors).",
        ),
        rule(
            "TokenscaleVllmPreempting",
            preempt,
            "warning",
            "vLLM is preempting running requests (KV pressure): they are recomputed, TPOT "
            "and E2E suffer.",
        ),
    ]
