"""``vllm:num_requests_waiting`` as vLLM exports it: what the last scheduled step left waiting,
in the simulated engine and in the playground's twin, read at the scrape's moment."""

from dataclasses import replace

from tokenscale.playground.engine import ModelClock, TwinEngine, TwinIdentity
from tokenscale.playground.exposition import VllmCollector
from tokenscale.playground.service import default_spec_path, load_service
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, ReplicaConfig, SimRequest


def _cfg() -> ReplicaConfig:
    return load_service(default_spec_path().read_text(), "default").engine


def test_a_request_arriving_during_a_step_is_not_reported_waiting() -> None:
    engine = Replica(_cfg(), Recorder(), 0.0)
    engine.add(SimRequest(0.0, 2000, 50), 0.0)
    engine.run_until(1e-6)  # the first step (its prefill) is scheduled and runs past now
    assert engine.clock > 1e-6
    engine.add(SimRequest(1e-6, 200, 50), 1e-6)  # arrives while that step runs
    assert len(engine.waiting) == 1
    assert engine.waiting_reported == 0  # vLLM's scheduler has not seen it yet
    engine.run_until(engine.clock + 1e-6)  # the next step admits it
    assert not engine.waiting
    assert engine.waiting_reported == 0


def test_a_request_the_scheduler_leaves_waiting_is_reported() -> None:
    engine = Replica(replace(_cfg(), max_num_seqs=1), Recorder(), 0.0)
    engine.add(SimRequest(0.0, 200, 500), 0.0)
    engine.add(SimRequest(0.0, 200, 500), 0.0)
    engine.run_until(1e-6)  # one sequence at a time: the second stays queued
    assert len(engine.running) == 1
    assert engine.waiting_reported == 1
    engine.waiting.clear()  # gone (an abort): no longer counted
    assert engine.waiting_reported == 0


class _Clock(ModelClock):
    """A modelled clock the test sets (the twin's driver never runs here)."""

    def __init__(self) -> None:
        super().__init__(20.0)
        self.t = 0.0

    def now(self) -> float:
        return self.t


def _sample(collector: VllmCollector, name: str) -> float:
    for metric in collector.collect():
        for s in metric.samples:
            if s.name == name:
                return float(s.value)
    raise AssertionError(f"{name} not exported")


def test_the_twin_reports_its_engine_as_of_the_scrape() -> None:
    clock = _Clock()
    engine = TwinEngine(_cfg(), clock)
    engine.submit(1000, 200)
    collector = VllmCollector(engine, TwinIdentity("m", 8192))
    # no driver wake-up since the request arrived: the scrape itself runs the engine to now
    clock.t = 2.0
    assert _sample(collector, "vllm:num_requests_waiting") == 0
    assert _sample(collector, "vllm:num_requests_running") == 1
    # its first token is counted (the TTFT histogram's count, divided by the speed)
    assert _sample(collector, "vllm:time_to_first_token_seconds_count") == 1 / 20.0
