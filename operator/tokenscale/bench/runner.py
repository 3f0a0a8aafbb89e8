"""The load-testing method of the knowledge map, as phases with caps.

1. **baseline**: single requests, one at a time (the floor of TTFT and TPOT);
2. **ramp**: closed-loop concurrency steps (1, 2, 4 … 64 by default), each ending at its
   request cap or time cap, whichever comes first;
3. **mix**: long and short prompts together (80 % 1k in / 200 out, 15 % 8k / 500, 5 % 32k / 1k,
   lengths scaled down to fit the endpoint's max context) at the operating concurrency;
4. **replay** (optional): a trace's arrivals, open loop, at its own or a given rate.

While a step runs, ``/metrics`` is sampled every second for the engine's queue and KV usage.
A step whose requests all fail (the server died) ends the run early with what it had; so does
Ctrl-C: the caller catches it and writes the steps measured so far.
"""

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import aiohttp
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from tokenscale.api.profile import BenchProfile, BenchStep, Phase
from tokenscale.bench.analysis import (
    RequestRecord,
    find_knee,
    operating_concurrency,
    summarize,
)
from tokenscale.bench.client import Endpoint, EndpointError, probe, served_models, stream_one
from tokenscale.catalog import vllm_metrics as v

DEFAULT_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64)
MAX_WAITING = 1e7
"""A queue gauge above this is not a queue (a broken exporter): not sampled."""
DEFAULT_MIX = ((0.80, 1000, 200), (0.15, 8000, 500), (0.05, 32000, 1000))
Progress = Callable[[str, float], None]


@dataclass
class BenchConfig:
    url: str
    model: str
    concurrency: Sequence[int] = DEFAULT_CONCURRENCY
    input_tokens: int = 1000
    output_tokens: int = 200
    step_requests: int = 200
    step_seconds: float = 60.0
    baseline_requests: int = 5
    mix: bool = True
    mix_requests: int = 100
    replay: Sequence[tuple[float, int, int]] = ()
    """(arrival s, input tokens, output tokens), already rate-scaled."""
    replay_seconds: float = 120.0
    request_timeout_s: float = 120.0
    slo_ttft_p99_seconds: float | None = None
    slo_tpot_p99_seconds: float | None = None
    gpu: str | None = None
    tensor_parallel_size: int | None = None
    engine_version: str | None = None
    seed: int = 0


@dataclass
class BenchState:
    """Everything measured so far (survives an interrupt)."""

    steps: list[BenchStep] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    complete: bool = False
    tag: int = 0

    def next_tag(self) -> int:
        self.tag += 1
        return self.tag


class _Sampler:
    """Samples ``/metrics`` once a second: total waiting, fullest KV usage."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session, self.url = session, url
        self.waiting: list[float] = []
        self.kv: list[float] = []
        self.available = True
        self.problem: str | None = None

    async def run(self, stop: asyncio.Event) -> None:
        while self.available and not stop.is_set():
            await self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)

    async def sample(self) -> None:
        try:
            async with self.session.get(
                f"{self.url}/metrics", timeout=aiohttp.ClientTimeout(total=2)
            ) as resp:
                if resp.status != 200:
                    self.available = False
                    return
                text = await resp.text()
        except (aiohttp.ClientError, TimeoutError):
            return
        waiting: float | None = None
        kv: float | None = None
        try:
            for family in text_string_to_metric_families(text):
                for s in family.samples:
                    value = float(s.value)
                    if not math.isfinite(value) or value < 0:
                        continue  # a NaN gauge (no engine yet) says nothing
                    if s.name == v.NUM_REQUESTS_WAITING and value <= MAX_WAITING:
                        waiting = (waiting or 0.0) + value
                    elif s.name in (v.KV_CACHE_USAGE, v.KV_CACHE_USAGE_LEGACY) and value <= 1:
                        kv = value if kv is None else max(kv, value)
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            self.available = False
            self.problem = f"/metrics is not Prometheus text ({exc}); queue and KV not sampled"
            return
        if waiting is not None:
            self.waiting.append(waiting)
        if kv is not None:
            self.kv.append(kv)


async def closed_loop(
    session: aiohttp.ClientSession,
    ep: Endpoint,
    state: BenchState,
    concurrency: int,
    sizes: Callable[[], tuple[int, int]],
    max_requests: int,
    max_seconds: float,
) -> tuple[list[RequestRecord], float]:
    records: list[RequestRecord] = []
    started = time.perf_counter()
    issued = 0

    async def worker() -> None:
        nonlocal issued
        while issued < max_requests and time.perf_counter() - started < max_seconds:
            issued += 1
            n_in, n_out = sizes()
            records.append(await stream_one(session, ep, n_in, n_out, state.next_tag()))
            if len(records) >= 8 and not any(r.ok for r in records[-8:]):
                return  # the server stopped answering: end the step

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return records, time.perf_counter() - started


async def _open_loop(
    session: aiohttp.ClientSession,
    ep: Endpoint,
    state: BenchState,
    arrivals: Sequence[tuple[float, int, int]],
    max_seconds: float,
) -> tuple[list[RequestRecord], float]:
    started = time.perf_counter()
    tasks: list[asyncio.Task[RequestRecord]] = []
    for t, n_in, n_out in arrivals:
        if t > max_seconds:
            break
        delay = t - (time.perf_counter() - started)
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(stream_one(session, ep, n_in, n_out, state.next_tag())))
    records = list(await asyncio.gather(*tasks))
    return records, time.perf_counter() - started


async def run_bench(cfg: BenchConfig, state: BenchState, progress: Progress) -> BenchProfile:
    """All phases; fills ``state`` as it goes so an interrupt keeps the finished steps."""
    ep = Endpoint(cfg.url.rstrip("/"), cfg.model, cfg.request_timeout_s)
    rng = random.Random(cfg.seed)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        await _check_model(session, ep, cfg)
        state.notes += await probe(session, ep)
        plan: list[tuple[Phase, int]] = [("baseline", 1)]
        plan += [("ramp", c) for c in cfg.concurrency]
        total = len(plan) + (1 if cfg.mix else 0) + (1 if cfg.replay else 0)

        async def step(
            phase: Phase, concurrency: int, sizes: Callable[[], tuple[int, int]], cap: int
        ) -> BenchStep:
            progress(f"{phase} at concurrency {concurrency}", len(state.steps) / total)
            sampler = _Sampler(session, ep.url)
            stop = asyncio.Event()
            sampling = asyncio.create_task(sampler.run(stop))
            records, took = await closed_loop(
                session, ep, state, concurrency, sizes, cap, cfg.step_seconds
            )
            stop.set()
            await sampling
            if sampler.problem is not None and sampler.problem not in state.notes:
                state.notes.append(sampler.problem)
            try:
                result = summarize(
                    phase, records, took, concurrency, None, sampler.waiting, sampler.kv
                )
            except ValidationError as exc:  # numbers no real engine produces
                where = ".".join(str(p) for p in exc.errors()[0]["loc"])
                raise EndpointError(
                    f"{phase} at concurrency {concurrency}: the server's answers give an "
                    f"implausible {where} ({exc.errors()[0]['msg']}); is it a real engine?",
                    bad_input=False,
                ) from exc
            state.steps.append(result)
            if result.requests == 0:
                state.notes.append(
                    f"{phase} at concurrency {concurrency}: no request succeeded ("
                    + failure_summary(records)
                    + "); stopping"
                )
            return result

        def fixed() -> tuple[int, int]:
            return cfg.input_tokens, cfg.output_tokens

        for phase, c in plan:
            cap = cfg.baseline_requests if phase == "baseline" else max(cfg.step_requests, c)
            s = await step(phase, c, fixed, cap)
            if s.requests == 0:
                return _profile(cfg, state)
        ramp = [s for s in state.steps if s.phase == "ramp"]
        knee = find_knee(ramp)
        if cfg.mix:
            mix = _scaled_mix(ep.max_model_len)
            c = (
                operating_concurrency(ramp, cfg.slo_ttft_p99_seconds, cfg.slo_tpot_p99_seconds)
                or knee
                or 1
            )

            def mixed() -> tuple[int, int]:
                x, acc = rng.random(), 0.0
                for share, n_in, n_out in mix:
                    acc += share
                    if x <= acc:
                        return n_in, n_out
                return mix[-1][1], mix[-1][2]

            await step("mix", c, mixed, cfg.mix_requests)
        if cfg.replay:
            progress("replay", len(state.steps) / total)
            records, took = await _open_loop(session, ep, state, cfg.replay, cfg.replay_seconds)
            rate = len(records) / took if took > 0 else None
            state.steps.append(summarize("replay", records, took, None, rate))
        state.complete = True
        progress("done", 1.0)
    return _profile(cfg, state)


def failure_summary(records: Sequence[RequestRecord], limit: int = 3) -> str:
    """The first distinct errors of failed requests, with counts: why nothing succeeded."""
    counts: dict[str, int] = {}
    for r in records:
        if r.ok:
            continue
        why = "timed out (--timeout)" if r.timed_out else (r.error or "no [DONE]")
        counts[why] = counts.get(why, 0) + 1
    if not counts:
        return "no request was sent"
    shown = [f"{n}× {why}" for why, n in list(counts.items())[:limit]]
    more = len(counts) - limit
    return "; ".join(shown) + (f"; {more} other distinct errors" if more > 0 else "")


async def _check_model(session: aiohttp.ClientSession, ep: Endpoint, cfg: BenchConfig) -> None:
    """Refuse a model the server does not serve, or lengths beyond its ``max_model_len``."""
    models = await served_models(session, ep)
    if not models:
        return
    if cfg.model not in models:
        raise EndpointError(
            f"--model {cfg.model!r} is not served at {ep.url}; it serves "
            + ", ".join(sorted(models)),
            bad_input=True,
        )
    limit = models[cfg.model]
    if limit is None:
        return
    ep.max_model_len = limit
    if cfg.input_tokens + cfg.output_tokens > limit:
        raise EndpointError(
            f"--input-tokens {cfg.input_tokens} + --output-tokens {cfg.output_tokens} exceeds "
            f"the server's max_model_len {limit} for {cfg.model}; lower them so that they sum "
            f"to at most {limit}",
            bad_input=True,
        )


def _scaled_mix(max_model_len: int | None) -> list[tuple[float, int, int]]:
    """The default mix with lengths cut to fit the endpoint's max context (keeping shares)."""
    out = []
    for share, n_in, n_out in DEFAULT_MIX:
        scale = 1.0
        if max_model_len is not None and n_in + n_out > max_model_len:
            scale = max_model_len / (n_in + n_out) * 0.95
        out.append((share, max(1, int(n_in * scale)), max(1, int(n_out * scale))))
    return out


def _profile(cfg: BenchConfig, state: BenchState) -> BenchProfile:
    ramp = [s for s in state.steps if s.phase == "ramp"]
    return BenchProfile(
        model=cfg.model,
        url=cfg.url,
        gpu=cfg.gpu,
        tensor_parallel_size=cfg.tensor_parallel_size,
        engine_version=cfg.engine_version,
        complete=state.complete,
        steps=list(state.steps),
        knee_concurrency=find_knee(ramp),
        slo_ttft_p99_seconds=cfg.slo_ttft_p99_seconds,
        slo_tpot_p99_seconds=cfg.slo_tpot_p99_seconds,
        operating_concurrency=operating_concurrency(
            ramp, cfg.slo_ttft_p99_seconds, cfg.slo_tpot_p99_seconds
        ),
        notes=list(state.notes),
    )


def partial_profile(cfg: BenchConfig, state: BenchState) -> BenchProfile:
    """What was measured before an interrupt (``complete`` False)."""
    state.notes.append("interrupted: the steps measured so far")
    return _profile(cfg, state)
