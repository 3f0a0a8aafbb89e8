"""The chart's alert rules, loaded into a real Prometheus as a rule file, against emulated vLLM
engines: each alert fires on the engine in trouble and none fires on a healthy one.

The rules are what ``helm template`` renders with ``prometheusRules.enabled`` (``for: 0s`` and
a 15 s rate window so that the test need not wait five minutes; the expressions are the same).
"""

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.chart_rules import render_prometheus_rule, rule_file_text
from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.playground.processes import wait_for
from tokenscale.playground.prometheus import PrometheusServer

pytestmark = pytest.mark.integration
NS = "team-a"


def _fired(prom: PrometheusServer) -> set[tuple[str, str]]:
    return {(a["alertname"], a.get("inferenceservice", "")) for a in prom.firing_alerts()}


@pytest.fixture
def prom(tmp_path: Path) -> Iterator[PrometheusServer]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(rule_file_text(render_prometheus_rule(for_="0s", rate_window="15s")))
    server = PrometheusServer(tmp_path / "prom", rule_files=(rules,)).start()
    try:
        yield server
    finally:
        server.stop()


def test_alerts_fire_on_a_sick_engine_and_not_on_a_healthy_one(prom: PrometheusServer) -> None:
    healthy = VllmMetricsEmulator().start()
    sick = VllmMetricsEmulator().start()
    dead = VllmMetricsEmulator().start()
    stop = threading.Event()
    try:
        prom.add_target(healthy.target, NS, "healthy")
        prom.add_target(sick.target, NS, "sick")
        prom.add_target(dead.target, NS, "dead")
        healthy.set_load(Load(rps=5.0))
        healthy.set_state(running=8, waiting=0, kv_usage=0.45)
        sick.set_load(Load(rps=5.0))
        sick.set_state(running=64, waiting=12, kv_usage=0.995)

        def trouble() -> None:
            """Preemptions and aborted requests, as a KV-starved engine shows them."""
            lab = sick.labels
            while not stop.wait(0.2):
                sick.preemptions.labels(**lab).inc(2)
                sick.success.labels(**lab, finished_reason="abort").inc()

        threading.Thread(target=trouble, daemon=True).start()
        wait_for(lambda: len(prom.query("up == 1")) == 3, 30, "three scraped targets")
        dead.stop()  # the engine crashed (a CUDA OOM kills it): scrapes fail, up == 0
        expected = {
            ("TokenscaleVllmEngineDown", "dead"),
            ("TokenscaleVllmKvCacheExhausted", "sick"),
            ("TokenscaleVllmRequestErrors", "sick"),
            ("TokenscaleVllmPreempting", "sick"),
        }
        wait_for(lambda: expected <= _fired(prom), 60, f"alerts {sorted(expected)}")
        time.sleep(3)  # a few more evaluations: the healthy engine must stay silent
        fired = _fired(prom)
        assert {name for name, svc in fired if svc == "healthy"} == set(), fired
        assert fired == expected
    finally:
        stop.set()
        for emulator in (healthy, sick):
            emulator.stop()
