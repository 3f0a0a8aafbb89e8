"""The TTFT and TPOT buckets read from a real Prometheus (metrics/promql.py): the share of
requests over the SLO the engine reads live is the range the simulator's buckets give for
the same requests (scaling/buckets.py), and the SLO-in-a-bucket case reads as no breach."""

import time
import uuid
from collections.abc import Callable

import pytest

from tests.support.vllm_emulator import VllmMetricsEmulator
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.promql import QueryConfig
from tokenscale.playground.processes import wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.scaling.buckets import over_slo

pytestmark = pytest.mark.integration
CFG = QueryConfig(gauge_window="10s", rate_window="15s")


def test_the_live_buckets_bound_the_share_over_the_slo(
    prometheus: PrometheusServer, emulators: Callable[..., VllmMetricsEmulator]
) -> None:
    ns = f"b-{uuid.uuid4().hex[:6]}"
    engine = emulators(ns, "svc")
    source = PrometheusSource(PrometheusConfig(url=prometheus.url, query=CFG))
    # per second: 180 requests at 0.8 s, 19 at 2.6 s (meet the 3 s SLO, inside vLLM's (2.5, 5]
    # bucket), 1 at 6 s (misses it); TPOT 0.03 s for all (on no bound: (0.025, 0.05])
    share = (0.005, 0.10)

    def fed() -> bool:
        for ttft, n in ((0.8, 180), (2.6, 19), (6.0, 1)):
            for _ in range(n):
                engine.record(100, 10, ttft, 0.03)
        snap = source.snapshots([ns], time.time()).get((ns, "svc"))
        if snap is None or snap.ttft_buckets is None or snap.tpot_buckets is None:
            return False
        got = over_slo(snap.ttft_buckets, 3.0)
        return got is not None and got == pytest.approx(share, abs=0.002)

    wait_for(fed, 60, f"the TTFT buckets of {ns} in Prometheus", interval_s=1.0)
    snap = source.snapshots([ns], time.time())[(ns, "svc")]
    assert snap.ttft_buckets is not None
    assert snap.tpot_buckets is not None
    # the bounds are vLLM's, the SLO's own bucket is (2.5, 5]
    assert 2.5 in snap.ttft_buckets.bounds
    assert 5.0 in snap.ttft_buckets.bounds
    lower, upper = over_slo(snap.ttft_buckets, 3.0) or (None, None)
    assert lower == pytest.approx(0.005, abs=0.002)
    assert upper == pytest.approx(0.10, abs=0.002)
    # the P99 Prometheus interpolates falls in the SLO's bucket, over the SLO: no breach alone
    # (0.5 % surely over, within the 1 % budget)
    assert snap.ttft_p99_s is not None
    assert 3.0 < snap.ttft_p99_s <= 5.0
    # TPOT: every request at 0.03 s, over a 0.025 s SLO for sure, none over 0.05 s
    assert over_slo(snap.tpot_buckets, 0.025) == pytest.approx((1.0, 1.0))
    assert over_slo(snap.tpot_buckets, 0.05) == pytest.approx((0.0, 0.0))
