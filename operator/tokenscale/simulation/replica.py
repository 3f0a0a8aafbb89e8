"""One simulated vLLM engine, scheduled like vLLM V1.

Each step (``vllm/v1/core/sched/scheduler.py``, in outline):

1. Running requests first, in admission order: a decode takes 1 token of the step's budget
   (``max_num_batched_tokens``), a partly prefilled prompt takes its next chunk (the whole rest
   without chunked prefill). Each needs KV blocks for the tokens it adds; when the pool is out,
   the **newest** running request is preempted (recompute: its blocks freed, it goes back to the
   head of the queue and later prefills its prompt plus what it had generated).
2. Then, if nothing was preempted, waiting requests in arrival order while the budget, the
   blocks and ``max_num_seqs`` allow; a prompt's leading blocks already in the prefix cache
   are not recomputed (at least its last token is).

With ``spec.lora`` (the plan's ``maxLoras``): a waiting request whose adapter would make the
step's batch span more than ``maxLoras`` adapters is skipped (vLLM's scheduler does the same,
and admits the requests behind it); an adapter entering the batch that is not among the
``maxLoras`` on the GPU (least recently used out) is loaded first — from host memory when it is
among the ``maxCpuLoras`` cached there, else from its source — and the step waits for it; each
step also runs the LoRA kernels for the distinct adapters it holds (``planning/lora.py``).

``vllm:num_requests_waiting`` is what the scheduler left waiting when it scheduled the current
step (:attr:`Replica.waiting_reported`): vLLM's gauge comes from the stats of the step it last
scheduled (``Scheduler.make_stats``), and a request that arrives during a step reaches the
scheduler's queue only before the next one, which admits it when there is room, so the gauge
never shows it. Counting it (one request in front of a busy engine, for part of a step) would
read as a queue where there is none.

The step's duration is the planner's own timing model (``PerfModel.mixed_step_seconds``)
divided by ``mismatch``: the "truth" can be faster or slower than what the planner assumes.
Stretches of pure decoding are advanced many steps at once (until a request finishes, blocks
run out or the caller's next event), with the step time at the stretch's mean context; that
keeps an hour of a busy fleet to seconds of CPU.
"""

import math
from collections import OrderedDict, deque
from dataclasses import dataclass

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning import PerfModel, Plan, replica_perf_model
from tokenscale.planning.lora import LoraPerfModel, LoraSetup
from tokenscale.simulation.recorder import Outcome, Recorder

#: Waiting requests a step looks past for one whose adapter has a slot (vLLM looks at all;
#: the cap keeps a long queue's step cheap).
MAX_SKIPPED = 1024


@dataclass(slots=True, eq=False)
class SimRequest:
    arrival_s: float
    input_tokens: int
    output_tokens: int
    prefix_blocks: tuple[int, ...] = ()
    prompt_tokens: int = 0
    """Tokens to prefill: the input, or input + generated after a preemption."""
    computed: int = 0
    kv: int = 0
    generated: int = 0
    blocks: int = 0
    first_token_s: float = -1.0
    last_token_s: float = 0.0
    looked_up: bool = False
    queued: bool = True
    remote_tokens: int = 0
    """Prompt tokens whose KV arrived from a prefill worker (disaggregated decode): admitted as
    computed, like a prefix-cache hit; a preemption loses them (vLLM recomputes)."""
    adapter: int = -1
    """The LoRA adapter it addresses; -1: the base model."""
    priority: int = 0
    """Its class's objective priority (higher first); used with priority scheduling."""

    def __post_init__(self) -> None:
        self.prompt_tokens = self.input_tokens


@dataclass(frozen=True)
class ReplicaConfig:
    perf: PerfModel
    kv_blocks: int
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool
    prefix_caching: bool
    prefix_block_tokens: int
    mismatch: float = 1.0
    lora: LoraSetup | None = None
    """``spec.lora`` at the plan's ``maxLoras`` (None: LoRA off)."""
    priority_scheduling: bool = False
    """vLLM's ``--scheduling-policy priority`` (rendered with spec.workload.classes): the
    waiting request of the highest class priority goes first (vLLM: the lowest ``priority``
    value), and a preemption takes the running request of the lowest (then the latest)."""


def replica_config(
    spec: InferenceServiceSpec, plan: Plan, prefix_block_tokens: int, mismatch: float = 1.0
) -> ReplicaConfig:
    """The engine ``plan`` deploys: its TP's timing model, KV blocks and vLLM flags."""
    perf = replica_perf_model(spec, plan)
    return ReplicaConfig(
        perf=perf,
        kv_blocks=plan.kv_capacity_blocks_per_replica,
        block_size=spec.serving.block_size,
        max_num_seqs=plan.max_num_seqs,
        max_num_batched_tokens=plan.max_num_batched_tokens,
        chunked_prefill=spec.serving.enable_chunked_prefill,
        prefix_caching=spec.serving.enable_prefix_caching,
        prefix_block_tokens=prefix_block_tokens,
        mismatch=mismatch,
        lora=perf.lora if isinstance(perf, LoraPerfModel) else None,
        priority_scheduling=bool(spec.workload.classes),
    )


class Replica:
    def __init__(self, cfg: ReplicaConfig, recorder: Recorder, clock_s: float) -> None:
        self.cfg = cfg
        self.rec = recorder
        self.clock = clock_s
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.free_blocks = cfg.kv_blocks
        self.preemptions = 0
        self.finished: list[SimRequest] | None = None
        """When a list, every finished request is appended (a prefill worker's hand-off)."""
        self._cache: OrderedDict[int, None] = OrderedDict()
        self._cache_capacity = max(
            1, cfg.kv_blocks * cfg.block_size // max(cfg.prefix_block_tokens, 1)
        )
        self._slots: OrderedDict[int, None] = OrderedDict()
        """Adapters on the GPU, least recently used first (at most ``maxLoras``)."""
        self._host: OrderedDict[int, None] = OrderedDict()
        """Adapters in host memory, least recently used first (at most ``maxCpuLoras``)."""
        self._lora_kernel_s = 0.0
        """The LoRA kernels' time per step of the current step's batch."""
        self._waiting_at_schedule = 0
        """Requests the last scheduled step left waiting (what vLLM's gauge reports)."""

    # -- what the fleet and the metrics see ------------------------------------------------------
    @property
    def load(self) -> int:
        return len(self.waiting) + len(self.running)

    @property
    def waiting_reported(self) -> int:
        """``vllm:num_requests_waiting``: the requests the last scheduled step left waiting (one
        since removed, an abort, no longer counts), not those that arrived during the step
        (module docstring)."""
        return min(self._waiting_at_schedule, len(self.waiting))

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.running

    @property
    def kv_usage(self) -> float:
        return 1.0 - self.free_blocks / self.cfg.kv_blocks

    def lora_state(self) -> tuple[int, int, bool]:
        """What ``vllm:lora_requests_info`` says: adapters running, adapters waiting, and
        whether every ``maxLoras`` slot is in use while adapters wait."""
        running = {r.adapter for r in self.running if r.adapter >= 0}
        waiting = {r.adapter for r in self.waiting if r.adapter >= 0} - running
        slots = self.cfg.lora.max_loras if self.cfg.lora is not None else 0
        return len(running), len(waiting), bool(waiting) and 0 < slots <= len(running)

    def flush_prefix_cache(self) -> None:
        """Forget every cached prefix block (a fault drill's cache flush)."""
        self._cache.clear()

    def add(self, req: SimRequest, now: float) -> None:
        if self.idle:
            self.clock = max(self.clock, now)
        self._enqueue(req, front=False)

    def _enqueue(self, req: SimRequest, front: bool) -> None:
        """FCFS: at the back (a preempted request at the front). Priority: after every waiting
        request of at least its priority (a preempted one before those of its own)."""
        waiting = self.waiting
        # the queue is ordered by priority, highest first: at either end the place is known
        # without a scan (always under FCFS; under priority whenever it goes to an end)
        anywhere = not self.cfg.priority_scheduling or not waiting
        if front and (anywhere or waiting[0].priority <= req.priority):
            waiting.appendleft(req)
            return
        if not front and (anywhere or waiting[-1].priority >= req.priority):
            waiting.append(req)
            return
        i = 0
        for i, w in enumerate(self.waiting):  # noqa: B007 - the position is the answer
            if w.priority < req.priority or (front and w.priority == req.priority):
                break
        else:
            i = len(self.waiting)
        self.waiting.insert(i, req)

    def _victim(self) -> SimRequest:
        """Who a preemption takes: the latest admitted (FCFS), or the lowest priority, the
        latest of those (priority scheduling)."""
        if not self.cfg.priority_scheduling:
            return self.running[-1]
        return min(reversed(self.running), key=lambda r: r.priority)

    def run_until(self, t: float) -> None:
        """Run steps that start before ``t`` (the last one may end after it)."""
        while self.clock < t:
            if self.idle:
                self.clock = t
                return
            self._step(t)

    # -- scheduling ----------------------------------------------------------------------------
    def _blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.cfg.block_size)

    def _preempt(self, victim: SimRequest) -> None:
        self.running.remove(victim)
        self.free_blocks += victim.blocks
        victim.blocks = victim.kv = victim.computed = 0
        victim.prompt_tokens = victim.input_tokens + victim.generated
        victim.looked_up = False
        victim.remote_tokens = 0
        self._enqueue(victim, front=True)
        self.preemptions += 1
        self.rec.preemptions += 1

    def _lookup_prefix(self, r: SimRequest) -> None:
        r.looked_up = True
        if r.remote_tokens > 0:
            r.computed = r.kv = min(r.remote_tokens, r.prompt_tokens - 1)
            return
        if not self.cfg.prefix_caching or not r.prefix_blocks:
            return
        self.rec.prefix_queries += r.prompt_tokens
        hits = 0
        for h in r.prefix_blocks:
            if h not in self._cache:
                break
            self._cache.move_to_end(h)
            hits += 1
        cached = min(hits * self.cfg.prefix_block_tokens, r.prompt_tokens - 1)
        if cached > 0:
            r.computed = r.kv = cached
            self.rec.prefix_hits += cached

    def _remember_prefix(self, r: SimRequest) -> None:
        if not self.cfg.prefix_caching:
            return
        full = r.input_tokens // self.cfg.prefix_block_tokens
        for h in r.prefix_blocks[:full]:
            self._cache[h] = None
            self._cache.move_to_end(h)
        while len(self._cache) > self._cache_capacity:
            self._cache.popitem(last=False)

    def _schedule(self) -> tuple[list[SimRequest], list[tuple[SimRequest, int]], bool]:
        cfg = self.cfg
        budget = cfg.max_num_batched_tokens
        decode: list[SimRequest] = []
        chunks: list[tuple[SimRequest, int]] = []
        preempted = False
        i = 0
        bs = cfg.block_size
        running = self.running
        while i < len(running) and budget > 0:
            r = running[i]
            rest = r.prompt_tokens - r.computed
            n = 1 if rest <= 0 else min(rest, budget)
            if rest > 0 and not cfg.chunked_prefill and n < rest:
                i += 1
                continue
            need = -(-(r.kv + n) // bs) - r.blocks
            while need > self.free_blocks and (victim := self._victim()) is not r:
                self._preempt(victim)
                preempted = True
            if need > self.free_blocks:
                self._preempt(r)
                preempted = True
                break
            self.free_blocks -= need
            r.blocks += need
            budget -= n
            if rest <= 0:
                decode.append(r)
            else:
                chunks.append((r, n))
            i += 1
        if preempted:
            return decode, chunks, True
        lora = cfg.lora
        active = {r.adapter for r in self.running if r.adapter >= 0} if lora else set()
        j = 0  # waiting requests skipped for want of an adapter slot stay in place, in order
        while len(self.waiting) > j and budget > 0 and len(self.running) < cfg.max_num_seqs:
            r = self.waiting[j]
            if (
                lora is not None
                and r.adapter >= 0
                and r.adapter not in active
                and len(active) >= lora.max_loras
            ):
                j += 1
                if j >= MAX_SKIPPED:
                    break
                continue
            if not r.looked_up:
                self._lookup_prefix(r)
            rest = r.prompt_tokens - r.computed
            n = min(rest, budget)
            if not cfg.chunked_prefill and n < rest:
                break
            need = self._blocks_for(r.kv + n) - r.blocks
            if need > self.free_blocks:
                break
            del self.waiting[j]
            if r.adapter >= 0:
                active.add(r.adapter)
            if r.queued:
                r.queued = False
                self.rec.queue.observe(max(0.0, self.clock - r.arrival_s))
            self.running.append(r)
            self.free_blocks -= need
            r.blocks += need
            budget -= n
            chunks.append((r, n))
        return decode, chunks, False

    # -- one step (or a stretch of identical decode steps) ----------------------------------------
    def _step(self, t_limit: float) -> None:
        decode, chunks, preempted = self._schedule()
        self._waiting_at_schedule = len(self.waiting)
        if not decode and not chunks:
            # nothing fits (a prompt larger than the pool waits for ever): idle to the next event
            self.clock = max(self.clock, t_limit)
            return
        perf, mismatch = self.cfg.perf, self.cfg.mismatch
        load_s = self._lora_step(decode, chunks)
        ctx = float(sum(r.kv for r in decode))
        flops = 0.0
        tokens = len(decode)
        for r, n in chunks:
            flops += perf.prefill_flops(n, r.kv)
            tokens += n
        dt = (perf.mixed_step_seconds(len(decode), ctx, flops, tokens) + self._lora_kernel_s) / (
            mismatch
        )
        steps = 1
        if decode and not chunks and not preempted:
            steps = self._stretch(decode, t_limit, dt, ctx)
            if steps > 1:
                dt = self._decode_step_s(len(decode), ctx + len(decode) * (steps - 1) / 2.0)
        end = self.clock + dt * steps + load_s
        rec = self.rec
        clock, on_time = self.clock, 0
        for r in decode:
            if r.last_token_s == clock:  # generated in the previous step: its gap is dt
                on_time += 1
            else:
                rec.itl.observe(clock + dt - r.last_token_s)
            r.kv += steps
            r.generated += steps
            r.last_token_s = end
        if on_time:
            rec.itl.observe(dt, float(on_time))
        if steps > 1:
            rec.itl.observe(dt, float(len(decode) * (steps - 1)))
        rec.generation_tokens += len(decode) * steps
        finished = [r for r in decode if r.generated >= r.output_tokens]
        for r, n in chunks:
            r.kv += n
            r.computed += n
            if r.computed >= r.prompt_tokens:
                r.generated += 1
                rec.generation_tokens += 1
                if r.first_token_s < 0:
                    r.first_token_s = end
                    rec.ttft.observe(end - r.arrival_s)
                    rec.prompt_tokens += r.input_tokens
                    self._remember_prefix(r)
                else:
                    rec.itl.observe(end - r.last_token_s)
                r.last_token_s = end
                if r.generated >= r.output_tokens:
                    finished.append(r)
        self.clock = end
        for r in finished:
            self._finish(r)

    def _decode_step_s(self, seqs: int, context_tokens: float) -> float:
        """One pure-decode step of ``seqs`` sequences holding ``context_tokens`` in all."""
        step = self.cfg.perf.mixed_step_seconds(seqs, context_tokens, 0.0, seqs)
        return (step + self._lora_kernel_s) / self.cfg.mismatch

    def _lora_step(self, decode: list[SimRequest], chunks: list[tuple[SimRequest, int]]) -> float:
        """The adapters of this step's batch: load those not on the GPU (LRU out, host memory
        or the source), set the kernels' time; returns the seconds the loads stall the step."""
        lora = self.cfg.lora
        if lora is None:
            return 0.0
        used = {r.adapter for r in decode if r.adapter >= 0}
        used.update(r.adapter for r, _ in chunks if r.adapter >= 0)
        tp = self.cfg.perf.tp
        stall = 0.0
        for a in used:
            if a in self._slots:
                self._slots.move_to_end(a)
                continue
            if a in self._host:
                self._host.move_to_end(a)
                stall += lora.host_load_seconds(tp, a)
                self.rec.lora_host_loads += 1
            else:
                stall += lora.source_load_seconds(tp, a)
                self.rec.lora_source_loads += 1
                self._host[a] = None
                while len(self._host) > lora.max_cpu_loras:
                    self._host.popitem(last=False)
            self._slots[a] = None
            while len(self._slots) > lora.max_loras:
                victim = next((x for x in self._slots if x not in used), None)
                if victim is None:
                    break
                del self._slots[victim]
        perf = self.cfg.perf
        self._lora_kernel_s = (
            perf.lora_kernel_seconds(len(used)) if isinstance(perf, LoraPerfModel) else 0.0
        )
        return stall

    def _stretch(self, decode: list[SimRequest], t_limit: float, dt: float, ctx: float) -> int:
        """How many identical decode steps to take at once (≥ 1): the stretch ends at most one
        step after ``t_limit`` (the caller's next event, an arrival), so a request arriving
        during a long decode stretch is scheduled within one step of its arrival."""
        k = min(r.output_tokens - r.generated for r in decode)
        if dt > 0 and self.clock < t_limit < math.inf:
            k = min(k, max(1, math.ceil((t_limit - self.clock) / dt)))
            if k > 1:
                # the step time grows with the context over the stretch: bound it by the last
                # step's (the stretch runs at its mean step time, which is no longer)
                last = self._decode_step_s(len(decode), ctx + len(decode) * (k - 1))
                k = min(k, max(1, math.ceil((t_limit - self.clock) / last)))
        if k <= 1:
            return 1
        bs = self.cfg.block_size

        def extra_blocks(steps: int) -> int:
            # blocks beyond those the first step allocated, for steps − 1 more tokens each
            return sum(self._blocks_for(r.kv + steps) - r.blocks for r in decode)

        if len(decode) * (k // bs + 1) > self.free_blocks and extra_blocks(k) > self.free_blocks:
            lo, hi = 1, k
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if extra_blocks(mid) <= self.free_blocks:
                    lo = mid
                else:
                    hi = mid - 1
            k = lo
        if k > 1:
            for r in decode:
                need = self._blocks_for(r.kv + k) - r.blocks
                r.blocks += need
                self.free_blocks -= need
        return k

    def _finish(self, r: SimRequest) -> None:
        self.running.remove(r)
        self.free_blocks += r.blocks
        r.blocks = 0
        rec = self.rec
        e2e = r.last_token_s - r.arrival_s
        ttft = r.first_token_s - r.arrival_s
        tpot = (r.last_token_s - r.first_token_s) / (r.generated - 1) if r.generated > 1 else 0.0
        rec.success += 1
        rec.e2e.observe(e2e)
        rec.output_tokens.observe(r.generated)
        if r.generated > 1:
            rec.tpot.observe(tpot)
        rec.outcomes.append(
            Outcome(r.arrival_s, ttft, tpot, e2e, r.generated, r.priority, r.input_tokens)
        )
        if self.finished is not None:
            self.finished.append(r)
