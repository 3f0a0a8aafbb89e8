"""PURE: name the bottleneck in the knowledge map's words, with the numbers that show it.

queue high → capacity; TTFT high while the queue is low → prefill-bound; TPOT high →
decode-bound; KV near full → context/concurrency; preemptions → KV exhausted.
"""

from tokenscale.api.scaling import ScalingPolicy
from tokenscale.api.slo import Slo
from tokenscale.scaling.snapshot import Snapshot


def diagnose(snap: Snapshot, slo: Slo, policy: ScalingPolicy) -> list[str]:
    out: list[str] = []
    n = max(snap.replicas_reporting, 1)
    waiting = (snap.waiting or 0.0) / n
    queue_high = waiting >= policy.waiting_per_replica_high
    if queue_high:
        q = f", queue time P99 {snap.queue_p99_s:.2f} s" if snap.queue_p99_s is not None else ""
        out.append(
            f"capacity: {waiting:.1f} requests waiting per replica (≥ "
            f"{policy.waiting_per_replica_high:g}){q} → add replicas; check bursts, admission "
            "limits and long requests"
        )
    ttft_slo = slo.ttft_p99_seconds
    if ttft_slo and snap.ttft_p99_s is not None and snap.ttft_p99_s > ttft_slo and not queue_high:
        hit = (
            f", prefix-cache hit rate {snap.prefix_cache_hit_rate:.0%}"
            if snap.prefix_cache_hit_rate is not None
            else ""
        )
        prompt = (
            f", mean prompt {snap.mean_input_tokens:,.0f} tokens" if snap.mean_input_tokens else ""
        )
        out.append(
            f"prefill-bound: TTFT P99 {snap.ttft_p99_s:.2f} s > SLO {ttft_slo:g} s while only "
            f"{waiting:.1f} wait per replica{prompt}{hit} → shorter prompts, prefix caching, "
            "chunked prefill, more compute per replica"
        )
    tpot_slo = slo.tpot_p99_seconds
    if tpot_slo and snap.tpot_p99_s is not None and snap.tpot_p99_s > tpot_slo:
        batch = (snap.running or 0.0) / n
        out.append(
            f"decode-bound: TPOT P99 {snap.tpot_p99_s * 1e3:.0f} ms > SLO {tpot_slo * 1e3:.0f} ms "
            f"at {batch:.1f} running per replica → smaller batches (more replicas), more "
            "bandwidth per replica (TP, FP8), check TP communication"
        )
    if snap.kv_usage_max is not None and snap.kv_usage_max >= policy.kv_high_watermark:
        free = (
            f", {snap.kv_blocks_free:,.0f} of {snap.kv_blocks_total:,.0f} blocks free"
            if snap.kv_blocks_free is not None and snap.kv_blocks_total
            else ""
        )
        out.append(
            f"KV cache near full: usage {snap.kv_usage_max:.2f} ≥ {policy.kv_high_watermark:g}"
            f"{free} → context length, concurrency, FP8 KV, prefix caching, memory reservation"
        )
    if snap.preemptions_per_s:
        out.append(
            f"KV exhausted: {snap.preemptions_per_s:.2f} preemptions/s (recompute) → more KV "
            "per replica or fewer concurrent sequences"
        )
    return out
