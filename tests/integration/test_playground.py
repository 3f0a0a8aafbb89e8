"""The playground: its vLLM twin against the suite's independent emulator, fake engine and the
simulator; and a headless run of the whole loop (real control plane, Prometheus, operator)."""

import asyncio
import json
import math
import os
import statistics
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.openai_server import OpenAIServer, ServerKnobs
from tests.support.vllm_emulator import VllmMetricsEmulator
from tokenscale.playground.drills import fault_reports
from tokenscale.playground.engine import ModelClock, TwinDriver, TwinEngine
from tokenscale.playground.faults import FAULT_EVENT
from tokenscale.playground.load import LoadStats, Router, replay, shaped_trace
from tokenscale.playground.processes import free_port, port_in_use
from tokenscale.playground.service import PlaygroundService, default_spec_path, load_service
from tokenscale.playground.session import Frame, Playground, PlaygroundOptions
from tokenscale.playground.twin import Twin
from tokenscale.simulation import Trace
from tokenscale.simulation.faults import RETRY_DELAY_S, parse_fault
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, SimRequest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def service() -> PlaygroundService:
    return load_service(default_spec_path().read_text(), "default")


def _with_twin(
    service: PlaygroundService,
    speed: float,
    body: Callable[[Twin], Coroutine[Any, Any, Any]],
) -> Any:
    async def main() -> Any:
        clock = ModelClock(speed)
        driver = TwinDriver(clock)
        driver.start()
        engine = TwinEngine(service.engine, clock, driver.kick)
        driver.engines.add(engine)
        twin = await Twin(engine, service.identity, free_port()).start()
        try:
            return await body(twin)
        finally:
            await twin.stop()
            await driver.stop()

    return asyncio.run(main())


def _families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_twin_metrics_have_vllms_names_labels_and_buckets(service: PlaygroundService) -> None:
    async def body(twin: Twin) -> str:
        async with aiohttp.ClientSession() as session:
            payload = {"model": "m", "prompt": "a b c", "max_tokens": 3, "stream": True}
            async with session.post(f"{twin.url}/v1/completions", json=payload) as resp:
                await resp.read()
            async with session.get(f"{twin.url}/metrics") as resp:
                assert resp.headers["Content-Type"].startswith("text/plain")
                return await resp.text()

    twin_text = _with_twin(service, 50.0, body)
    emulator = VllmMetricsEmulator(
        model_name=service.identity.model, max_model_len=service.identity.max_model_len
    )
    emulator.record(100, 10, 0.2, 0.03)
    reference = generate_latest(emulator.registry).decode()
    ours, theirs = _families(twin_text), _families(reference)
    assert ours.keys() == theirs.keys()
    for name, family in theirs.items():
        mine = ours[name]
        assert mine.type == family.type, name
        assert {s.name for s in mine.samples} == {s.name for s in family.samples}, name
        assert {(s.name, tuple(sorted(s.labels))) for s in mine.samples} == {
            (s.name, tuple(sorted(s.labels))) for s in family.samples
        }, name
        if family.type == "histogram":
            les = [s.labels["le"] for s in family.samples if s.name.endswith("_bucket")]
            assert [s.labels["le"] for s in mine.samples if s.name.endswith("_bucket")] == les
    # the raw text spells bucket bounds as vLLM does
    assert 'le="1.0"' in twin_text
    info = next(s for s in ours["vllm:cache_config_info"].samples)
    assert info.labels["num_gpu_blocks"] == str(service.plan.kv_capacity_blocks_per_replica)
    done = next(
        s
        for s in ours["vllm:request_success"].samples
        if s.name.endswith("_total") and s.labels["finished_reason"] == "length"
    )
    assert done.value == pytest.approx(1 / 50.0)  # counters read per modelled second


async def _sse(session: aiohttp.ClientSession, url: str, payload: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    async with session.post(f"{url}/v1/completions", json=payload) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        async for raw in resp.content:
            line = raw.strip()
            if line.startswith(b"data:"):
                data = line[5:].strip()
                out.append("[DONE]" if data == b"[DONE]" else json.loads(data))
    return out


def test_twin_speaks_the_fake_engines_wire_format(service: PlaygroundService) -> None:
    payload = {
        "model": "m",
        "prompt": "one two three four",
        "max_tokens": 5,
        "stream": True,
        "stream_options": {"include_usage": True},
    }

    async def body(twin: Twin) -> tuple[list[Any], list[Any], dict[str, Any], int, int]:
        fake = OpenAIServer(ServerKnobs(), free_port()).start()
        try:
            async with aiohttp.ClientSession() as session:
                ours = await _sse(session, twin.url, payload)
                theirs = await _sse(session, fake.url, payload)
                async with session.post(f"{twin.url}/tokenize", json={"prompt": "a b c"}) as r:
                    tokenized = await r.json()
                async with session.get(f"{twin.url}/v1/models") as r:
                    models = await r.json()
                async with session.get(f"{twin.url}/health") as r:
                    health = r.status
                long = {**payload, "stream": False, "max_tokens": 10**6}
                async with session.post(f"{twin.url}/v1/completions", json=long) as r:
                    too_long = r.status
        finally:
            fake.close()
        assert tokenized["count"] == 3
        assert tokenized["max_model_len"] == service.identity.max_model_len
        return ours, theirs, models, health, too_long

    ours, theirs, models, health, too_long = _with_twin(service, 20.0, body)
    assert ours[-1] == theirs[-1] == "[DONE]"
    assert set(ours[0]) == set(theirs[0])
    assert set(ours[0]["choices"][0]) == set(theirs[0]["choices"][0])
    assert ours[-2]["choices"] == []
    assert ours[-2]["usage"] == theirs[-2]["usage"]
    text = "".join(c["choices"][0]["text"] for c in ours[:-2])
    assert len(text.split()) == 5
    assert ours[-3]["choices"][0]["finish_reason"] == "length"
    assert models["data"][0]["id"] == service.identity.model
    assert health == 200
    assert too_long == 400


def test_a_client_that_goes_away_aborts_its_request(service: PlaygroundService) -> None:
    payload = {"model": "m", "prompt": "a " * 100, "max_tokens": 500, "stream": True}

    async def body(twin: Twin) -> str:
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{twin.url}/v1/completions", json=payload) as resp:
                await resp.content.readline()  # the first chunk, then hang up
            for _ in range(100):
                await asyncio.sleep(0.05)
                if not twin.engine.streams:
                    break
            async with session.get(f"{twin.url}/metrics") as resp:
                return await resp.text()

    families = _families(_with_twin(service, 1.0, body))
    running = next(iter(families["vllm:num_requests_running"].samples))
    assert running.value == 0
    aborted = next(
        s
        for s in families["vllm:request_success"].samples
        if s.name.endswith("_total") and s.labels["finished_reason"] == "abort"
    )
    assert aborted.value == 1
    kv = next(iter(families["vllm:kv_cache_usage_perc"].samples))
    assert kv.value == 0


def _simulated(service: PlaygroundService, trace: Trace) -> tuple[list[float], list[float]]:
    """The simulator's replica alone on the same requests (what one simulated pod serves)."""
    rec = Recorder()
    replica = Replica(service.engine, rec, 0.0)
    for r in trace.requests:
        replica.run_until(r.arrival_s)
        replica.add(SimRequest(r.arrival_s, r.input_tokens, r.output_tokens), r.arrival_s)
    replica.run_until(math.inf)
    ttft = [o.ttft_s for o in rec.outcomes]
    tpot = [o.tpot_s for o in rec.outcomes if o.output_tokens > 1]
    return ttft, tpot


@pytest.mark.slow  # a playground run beside a simulation, ≈50 s: `pytest -m slow`
def test_twin_latency_matches_the_simulator_within_10_percent(
    service: PlaygroundService,
) -> None:
    speed = 2.0
    trace = shaped_trace("step", 90.0, 0.8, 0.8, seed=3)

    async def body(twin: Twin) -> LoadStats:
        router = Router()
        router.add(twin)
        stats = LoadStats()
        await replay(
            trace, router, speed, service.identity.model, service.identity.max_model_len, stats
        )
        return stats

    stats: LoadStats = _with_twin(service, speed, body)
    assert all(o.ok for o in stats.outcomes)
    ttft = [o.ttft_s for o in stats.outcomes if o.ttft_s is not None]
    tpot = [o.tpot_s for o in stats.outcomes if o.tpot_s is not None]
    sim_ttft, sim_tpot = _simulated(service, trace)

    def p90(values: list[float]) -> float:
        return statistics.quantiles(values, n=10)[-1]

    figures = {
        "ttft_mean": (statistics.mean(ttft), statistics.mean(sim_ttft)),
        "ttft_p90": (p90(ttft), p90(sim_ttft)),
        "tpot_mean": (statistics.mean(tpot), statistics.mean(sim_tpot)),
        "tpot_p90": (p90(tpot), p90(sim_tpot)),
    }
    for name, (a, b) in figures.items():
        print(f"{name}: twin {a:.4f} s, simulator {b:.4f} s ({(a / b - 1) * 100:+.1f} %)")
    for name, (twin_value, sim_value) in figures.items():
        assert twin_value == pytest.approx(sim_value, rel=0.10), name


@pytest.mark.slow  # a whole headless playground run, ≈80–115 s: `pytest -m slow`
def test_playground_headless_scales_up_and_down_and_leaves_nothing_running(
    service: PlaygroundService, tmp_path: Path
) -> None:
    """~2 minutes: a step load (low, 3× the spec's peak, low) at ×20."""
    trace = shaped_trace("step", 1800.0, 0.25, 3.0, seed=1)
    opts = PlaygroundOptions(
        service=service, trace=trace, workdir=tmp_path / "pg", speed=20.0, settle_s=240.0
    )
    notes: list[str] = []
    decisions: set[str] = set()

    def on_frame(frame: Frame) -> None:
        if frame.decision:
            decisions.add(frame.decision)

    pg = Playground(opts, notes.append)
    try:
        pg.start_infrastructure()
        result = asyncio.run(pg.run(on_frame))
    finally:
        pg.stop()
    print("\n".join(notes))
    for p in result.timeline[::5]:
        print(
            f"{p.t_s:6.0f} s  rps {p.arrival_rps:5.2f}  desired {p.replicas_target}  "
            f"ready {p.replicas_ready}  starting {p.replicas_starting}  kv {p.kv_usage_max:.2f}  "
            f"waiting {p.waiting}  ttft99 {p.ttft_p99_s}  {p.reason}"
        )
    for e in result.events:
        print(f"{e.t_s:6.0f} s  {e.message}")
    ups = [e for e in result.events if _direction(e.message) > 0]
    downs = [e for e in result.events if _direction(e.message) < 0]
    assert ups, notes
    assert downs, notes
    assert ups[0].t_s < downs[-1].t_s
    assert any(":" in e.message for e in ups)  # the event says why
    assert any(d for d in decisions), decisions  # and so does the status
    assert result.completed >= 0.95 * result.sent
    # everything it started is gone: no process, no port
    for pid in result.pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not [p for p in result.ports if port_in_use(p)]


def _direction(message: str) -> int:
    """+1 for "Scaled 3→5: …", -1 for "Scaled 5→4: …"."""
    head = message.split(":", 1)[0].removeprefix("Scaled ").strip()
    before, _, after = head.partition("→")
    try:
        return (int(after) > int(before)) - (int(after) < int(before))
    except ValueError:
        return 0


@pytest.mark.slow  # two playground runs, ≈50 s: `pytest -m slow`
def test_playground_replica_loss_drill_retries_the_cut_requests_and_replaces_the_pod(
    service: PlaygroundService, tmp_path: Path
) -> None:
    """~1 minute: a steady load at ×20; at 3:00 the busiest twin is killed."""
    trace = shaped_trace("step", 480.0, 2.0, 2.0, seed=4)
    fault = parse_fault("replica-loss@3:00")
    opts = PlaygroundOptions(
        service=service,
        trace=trace,
        workdir=tmp_path / "pg",
        speed=20.0,
        settle_s=60.0,
        faults=(fault,),
        client_retries=True,
    )
    notes: list[str] = []
    pg = Playground(opts, notes.append)
    try:
        pg.start_infrastructure()
        result = asyncio.run(pg.run())
    finally:
        pg.stop()
    print("\n".join(notes))
    kills = [e for e in result.events if e.reason == FAULT_EVENT]
    assert len(kills) == 1, notes
    assert kills[0].t_s == pytest.approx(180.0, abs=5.0)
    cut = int(kills[0].message.split(" died with ")[1].split()[0])
    assert cut >= 1, kills[0].message  # the busiest twin held requests
    # the ReplicaSet replaced the pod: a twin started after the kill
    killed_pod = kills[0].message.split("pod ")[1].split()[0]
    after = notes[next(i for i, n in enumerate(notes) if n.startswith("fault: ")) + 1 :]
    replacements = [n for n in after if n.startswith("pod ") and n.endswith("starting")]
    assert replacements, notes
    assert killed_pod not in replacements[0]
    # every request finished: the cut ones were retried, their TTFT from the first arrival
    assert result.completed == result.sent, (result.completed, result.sent)
    retried = [o for o in result.outcomes if o.ttft_s is not None and o.ttft_s >= RETRY_DELAY_S]
    assert len(retried) >= cut
    (report,) = fault_reports((fault,), result, trace, service.identity.max_model_len)
    print(report)
    assert report.kind == "replica-loss"
    assert report.at_s == 180.0
    assert 0.0 <= report.slo_attainment_during <= 1.0
    assert report.slo_attainment_during_without is None  # no baseline run here
    assert report.events
    assert "died with" in report.events[0]
    assert report.window_s >= 30.0
    for pid in result.pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not [p for p in result.ports if port_in_use(p)]
