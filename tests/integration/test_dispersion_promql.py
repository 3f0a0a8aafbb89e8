"""The arrivals' dispersion queries (metrics/promql.py) on a real Prometheus equal the
simulator's reading of the same counter samples (simulation/observe.py): one definition."""

import math
import time
import uuid
from collections.abc import Callable

import pytest
import requests

from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.promql import QueryConfig, arrival_count_queries
from tokenscale.playground.processes import wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.scaling import Snapshot
from tokenscale.simulation.observe import with_dispersion

pytestmark = pytest.mark.integration
# 2-s counts over 10 s at the fixture's 1-s scrapes: seconds of data, not half an hour
CFG = QueryConfig(gauge_window="10s", rate_window="15s", count_window_s=2, dispersion_range_s=10)
STEP_S, RANGE_S = 2.0, 10.0
COUNTER = "vllm:time_to_first_token_seconds_count"


def _at(prometheus: PrometheusServer, promql: str, at: float) -> list[dict[str, object]]:
    r = requests.get(
        f"{prometheus.url}/api/v1/query", params={"query": promql, "time": at}, timeout=10
    )
    r.raise_for_status()
    return list(r.json()["data"]["result"])


def test_the_promql_counts_equal_the_simulators_over_the_same_samples(
    prometheus: PrometheusServer, emulators: Callable[..., VllmMetricsEmulator]
) -> None:
    ns = f"d-{uuid.uuid4().hex[:6]}"
    engine = emulators(ns, "svc")
    engine.set_load(Load(rps=6, prompt_tokens=100, generation_tokens=10, ttft_s=0.1, tpot_s=0.01))
    # the range and the two windows before it (14 s), with a few scrapes to spare
    history = f'count_over_time({COUNTER}{{namespace="{ns}"}}[18s]) >= 17'
    bursts = 0

    def long_enough() -> bool:
        nonlocal bursts
        # a burst of first tokens every few seconds: counts more dispersed than the steady load
        for _ in range(25):
            engine.record(100, 10, 0.1, 0.01)
        bursts += 1
        return len(prometheus.query(history)) == 1

    wait_for(long_enough, 90, f"18 s of scrapes of {ns}", interval_s=3.0)
    at = math.floor(time.time()) - 0.5  # between two steps: no sample or step on an edge
    answers = {
        name: _at(prometheus, promql, at)
        for name, promql in arrival_count_queries(CFG, [ns]).items()
    }
    got = {name: float(series[0]["value"][1]) for name, series in answers.items()}  # type: ignore[index]
    raw = _at(prometheus, f'{COUNTER}{{namespace="{ns}"}}[60s]', at)
    assert len(raw) == 1
    samples = [(float(t), float(v)) for t, v in raw[0]["values"]]  # type: ignore[union-attr]
    mirror = with_dispersion(
        Snapshot(at=at, replicas_reporting=1), samples, at, step_s=STEP_S, range_s=RANGE_S
    )
    assert mirror is not None
    assert got["arrival_windows"] == mirror.arrival_windows == RANGE_S / STEP_S
    assert got["arrivals_mean"] == pytest.approx(mirror.arrivals_per_window_mean, rel=1e-9)
    assert got["arrivals_allan"] == pytest.approx(mirror.arrivals_per_window_allan, rel=1e-9)
    # the bursts on a steady load: more dispersed than Poisson, as the engine reads it
    assert bursts >= 5
    assert got["arrivals_allan"] / got["arrivals_mean"] > 1.0
    # and the source puts them into the service's snapshot
    source = PrometheusSource(PrometheusConfig(url=prometheus.url, query=CFG))
    snap = source.snapshots([ns], time.time(), dispersion=True).get((ns, "svc"))
    assert snap is not None
    assert snap.arrival_windows == RANGE_S / STEP_S
    assert snap.arrivals_per_window_mean is not None
    assert snap.arrivals_per_window_mean > 0
