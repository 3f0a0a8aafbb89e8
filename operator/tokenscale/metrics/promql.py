"""Every PromQL query the operator runs, in one place (vLLM 0.33 names; legacy fallbacks).

Queries are fleet-wide and grouped ``by (<namespace label>, <service label>)`` so one
evaluation cycle costs the same ~20 queries for 1 or 1,000 InferenceServices. Gauges are read
with ``last_over_time(…[gauge window])`` (a missed scrape is not a gap); rates and quantiles
over the rate window. Renamed metrics fall back with ``or``: ``vllm:gpu_cache_usage_perc``
(before 0.12) and ``vllm:time_per_output_token_seconds`` (before 0.13). Quantiles follow vLLM's
own dashboard: ``histogram_quantile(q, sum by (le) (rate(…_bucket[w])))``.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class QueryConfig:
    namespace_label: str = "namespace"
    service_label: str = "inferenceservice"
    instance_label: str = "instance"
    gauge_window: str = "1m"
    rate_window: str = "2m"


def selector(cfg: QueryConfig, namespaces: list[str] | None) -> str:
    parts = [f'{cfg.service_label}!=""']
    if namespaces:
        parts.append(f'{cfg.namespace_label}=~"{"|".join(namespaces)}"')
    return "{" + ",".join(parts) + "}"


def queries(cfg: QueryConfig, namespaces: list[str] | None) -> dict[str, str]:
    s = selector(cfg, namespaces)
    g = f"{cfg.namespace_label}, {cfg.service_label}"
    gw, rw = cfg.gauge_window, cfg.rate_window

    def gauge(metric: str, agg: str = "sum") -> str:
        return f"{agg} by ({g}) (last_over_time({metric}{s}[{gw}]))"

    def rate(metric: str) -> str:
        return f"sum by ({g}) (rate({metric}{s}[{rw}]))"

    def quantile(q: float, metric: str) -> str:
        return f"histogram_quantile({q}, sum by ({g}, le) (rate({metric}_bucket{s}[{rw}])))"

    kv_new, kv_old = "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"
    tpot_new = "vllm:request_time_per_output_token_seconds"
    tpot_old = "vllm:time_per_output_token_seconds"
    per_instance_waiting = (
        f"sum by ({g}, {cfg.instance_label}) (last_over_time(vllm:num_requests_waiting{s}[{gw}]))"
    )
    return {
        "replicas": f"count by ({g}) (last_over_time(vllm:num_requests_running{s}[{gw}]))",
        "waiting": gauge("vllm:num_requests_waiting"),
        "waiting_max": f"max by ({g}) ({per_instance_waiting})",
        "running": gauge("vllm:num_requests_running"),
        "kv_max": f"{gauge(kv_new, 'max')} or {gauge(kv_old, 'max')}",
        "kv_mean": f"{gauge(kv_new, 'avg')} or {gauge(kv_old, 'avg')}",
        "kv_per_instance": (
            f"max by ({g}, {cfg.instance_label}) (last_over_time({kv_new}{s}[{gw}])) or "
            f"max by ({g}, {cfg.instance_label}) (last_over_time({kv_old}{s}[{gw}]))"
        ),
        "cache_info": f"last_over_time(vllm:cache_config_info{s}[{gw}])",
        "ttft_p50": quantile(0.5, "vllm:time_to_first_token_seconds"),
        "ttft_p95": quantile(0.95, "vllm:time_to_first_token_seconds"),
        "ttft_p99": quantile(0.99, "vllm:time_to_first_token_seconds"),
        "itl_p99": quantile(0.99, "vllm:inter_token_latency_seconds"),
        "tpot_p50": f"{quantile(0.5, tpot_new)} or {quantile(0.5, tpot_old)}",
        "tpot_p99": f"{quantile(0.99, tpot_new)} or {quantile(0.99, tpot_old)}",
        # exact, not bucketed: what calibration compares with the model
        "tpot_mean": f"{rate(tpot_new + '_sum')} / {rate(tpot_new + '_count')}",
        # TTFT = queue + prefill phase: their exact means calibrate prefill
        "ttft_mean": (
            f"{rate('vllm:time_to_first_token_seconds_sum')} / "
            f"{rate('vllm:time_to_first_token_seconds_count')}"
        ),
        "queue_mean": (
            f"{rate('vllm:request_queue_time_seconds_sum')} / "
            f"{rate('vllm:request_queue_time_seconds_count')}"
        ),
        "e2e_p99": quantile(0.99, "vllm:e2e_request_latency_seconds"),
        "queue_p99": quantile(0.99, "vllm:request_queue_time_seconds"),
        "request_rate": rate("vllm:request_success_total"),
        "prompt_tps": rate("vllm:prompt_tokens_total"),
        "generation_tps": rate("vllm:generation_tokens_total"),
        "prefix_hit_rate": (
            f"{rate('vllm:prefix_cache_hits_total')} / {rate('vllm:prefix_cache_queries_total')}"
        ),
        "preemptions": rate("vllm:num_preemptions_total"),
        "newest_sample": f"max by ({g}) (timestamp(vllm:num_requests_running{s}))",
    }
