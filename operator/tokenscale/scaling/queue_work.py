"""PURE: the engines' queue in units of work — the seconds the waiting prompts take to prefill —
against the queue that would push TTFT past its SLO.

A count of waiting requests is not one unit: one waiting 12k-token prompt is twelve waiting
1k-token prompts, and one request waiting on two replicas (0.5 per replica, the old low
watermark) decided whether a fleet scaled down. So the queue is read as time:

    queue_s = waiting × mean prompt tokens × (1 − prefix-cache hit rate) ÷ (n × prefill_tps)

- **waiting**: ``vllm:num_requests_waiting`` summed over the ``n`` reporting engines.
- **mean prompt tokens**: ``rate(vllm:prompt_tokens_total) ÷ rate(TTFT _count)`` (vLLM counts
  both at the first token, so the ratio is exact while load moves); the spec's mean until
  traffic shows one.
- **prefill_tps**: the tokens per second one engine prefills while the queue is non-empty: each
  scheduler step fills the chunk budget the decodes leave (``maxNumBatchedTokens − B`` tokens,
  B the observed batch per engine), so ``(budget − B) ÷ (decode step at B + that chunk's
  prefill)``, from the planner's timing model with the *measured* prefill and decode
  calibration (predicted ÷ observed prefill phase TTFT − queue, and TPOT; ``scaling/need.py``).
  Without chunked prefill one prompt fills a step.

The watermarks come from the SLO, not constants:

- **high** = TTFT SLO − a mean prompt's own prefill at the observed batch (the planner's
  ``own_ttft_seconds``, calibrated): a request arriving behind this much work starts its
  prefill too late to meet the SLO. Never below ``MIN_HIGH_SHARE`` of the SLO (a prompt whose own
  prefill alone uses the SLO is the KV/TTFT signals' business, not the queue's).
- **low** = ``latencyLowRatio`` × high, with the work on one replica fewer: the queue reads low
  when ``queue_s × n / (n − 1) < latencyLowRatio × high`` (on one replica: ``queue_s <
  latencyLowRatio × high``).

A queue that waits for decodes to finish (a full KV cache or ``maxNumSeqs``), not for prefill,
drains only as fast as requests are admitted. So the queue also reads as **the time it takes to
admit**, by Little's law on what the engines are seen to do:

    admit_s = waiting ÷ started_rps

(``started_rps``: requests reaching their first token per second over the rate window, the
queue's own throughput). ``queue_s`` is the larger of the two: the prefill estimate where
prefill is what the queue waits for, the measured admission where it is not. Both read about
zero for a request or two behind a fleet that admits tens a second.
Without a TTFT SLO the queue has no time to be judged against; the engine then falls back to
the count watermarks ``waitingPerReplicaHigh/Low``.
"""

import math
from dataclasses import dataclass

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import PerfModel
from tokenscale.scaling.snapshot import Snapshot

MIN_HIGH_SHARE = 0.1
"""The queue's high watermark is at least this share of the TTFT SLO."""


@dataclass(frozen=True)
class QueueWork:
    """The queue read as the time its work takes, with the watermarks the SLO sets."""

    waiting: float
    waiting_tokens: float
    """Prompt tokens still to prefill in the queue (prefix-cache hits taken off)."""
    prompt_tokens_mean: float
    prompt_source: str
    """``observed`` (the prompt-token rate ÷ the started rate) or ``forecast`` (the spec's)."""
    prefill_tps_per_replica: float
    """Tokens per second one engine prefills with the queue non-empty, at the observed batch."""
    replicas: int
    queue_s: float
    prefill_s: float
    """The waiting prompts' prefill time (the work)."""
    admit_s: float | None
    """``waiting ÷ started_rps`` (None: no start rate read yet)."""
    high_s: float
    low_s: float

    @property
    def over_high(self) -> bool:
        return self.queue_s >= self.high_s


def prefill_tps(perf: PerfModel, batch: float, prompt_tokens: float) -> float:
    """Prompt tokens per second one engine prefills while prompts wait, at ``batch`` decodes:
    the chunk budget the decodes leave, per step of decodes plus that chunk (one whole prompt
    per step without chunked prefill)."""
    b = max(0.0, batch)
    chunk = (
        max(1.0, perf.max_num_batched_tokens - math.ceil(b))
        if perf.chunked_prefill
        else max(1.0, prompt_tokens)
    )
    step = perf.step_seconds(b) + perf.chunk_seconds(chunk)
    return chunk / step if step > 0 else math.inf


def queue_work(
    snap: Snapshot,
    spec: InferenceServiceSpec,
    perf: PerfModel,
    low_ratio: float,
) -> QueueWork | None:
    """The queue as time (module docstring); None without a TTFT SLO or a queue reading."""
    slo = spec.slo.ttft_p99_seconds
    if slo is None or snap.waiting is None:
        return None
    n = max(snap.replicas_reporting, 1)
    observed = snap.mean_input_tokens
    prompt = observed if observed is not None and observed > 0 else spec.workload.input_tokens.mean
    hit = snap.prefix_cache_hit_rate
    hit = 0.0 if hit is None else min(max(hit, 0.0), 1.0)
    batch = 0.0 if snap.running is None else snap.running / n
    rate = prefill_tps(perf, batch, prompt)
    tokens = max(0.0, snap.waiting) * prompt * (1.0 - hit)
    prefill_s = tokens / (n * rate)
    started = snap.started_rps
    admit_s = max(0.0, snap.waiting) / started if started is not None and started > 0 else None
    queue_s = max(prefill_s, admit_s or 0.0)
    own = perf.own_ttft_seconds(batch, prompt)
    high = max(slo - own, MIN_HIGH_SHARE * slo)
    low = low_ratio * high * ((n - 1) / n if n > 1 else 1.0)
    return QueueWork(
        waiting=max(0.0, snap.waiting),
        waiting_tokens=tokens,
        prompt_tokens_mean=prompt,
        prompt_source="observed" if observed is not None and observed > 0 else "forecast",
        prefill_tps_per_replica=rate,
        replicas=n,
        queue_s=queue_s,
        prefill_s=prefill_s,
        admit_s=admit_s,
        high_s=round(high, 3),
        low_s=round(low, 3),
    )
