"""vLLM's speculative-decoding counters read through a real Prometheus: the snapshot's
acceptance rate is accepted ÷ drafted tokens; a service without speculation has none and no
problem is reported for it."""

import threading
import time
import uuid
from collections.abc import Callable

import pytest

from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.metrics import PrometheusConfig, PrometheusSource
from tokenscale.metrics.promql import QueryConfig
from tokenscale.playground.processes import wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.scaling import Snapshot

pytestmark = pytest.mark.integration
WINDOWS = QueryConfig(gauge_window="10s", rate_window="15s")


def test_the_acceptance_rate_is_accepted_over_drafted(
    prometheus: PrometheusServer, emulators: Callable[..., VllmMetricsEmulator]
) -> None:
    ns = f"s-{uuid.uuid4().hex[:6]}"
    spec_pods = [emulators(ns, "spec", speculative=True) for _ in range(2)]
    plain = emulators(ns, "plain")
    for e in (*spec_pods, plain):
        e.set_state(running=4, waiting=0, kv_usage=0.3)
        e.set_load(Load(rps=3))
    stop = threading.Event()

    def speculate() -> None:
        """k = 4 per draft; pod 0 accepts 3 of every 4 drafted tokens, pod 1 half."""
        while not stop.wait(0.1):
            spec_pods[0].record_speculation(drafts=10, draft_tokens=40, accepted_tokens=30)
            spec_pods[1].record_speculation(drafts=10, draft_tokens=40, accepted_tokens=20)

    threading.Thread(target=speculate, daemon=True).start()
    source = PrometheusSource(PrometheusConfig(url=prometheus.url, query=WINDOWS))
    # both pods scraped through a whole rate window: a condition on the data's extent
    full = (
        f'count_over_time(vllm:spec_decode_num_draft_tokens_total{{namespace="{ns}"}}[15s]) >= 15'
    )
    wait_for(lambda: len(prometheus.query(full)) == 2, 60, "a full window of both pods")
    try:
        found: dict[str, Snapshot] = {}

        def ready() -> bool:
            snaps = source.snapshots([ns], time.time())
            spec, other = snaps.get((ns, "spec")), snaps.get((ns, "plain"))
            if spec is None or other is None or spec.spec_decode_acceptance_rate is None:
                return False
            found.update(spec=spec, plain=other)
            return True

        wait_for(ready, 60, "a speculative acceptance rate", interval_s=1.0)
        spec, other = found["spec"], found["plain"]
        # (30 + 20) / (40 + 40) over the same window
        assert spec.spec_decode_acceptance_rate == pytest.approx(0.625, abs=0.02)
        assert other.spec_decode_acceptance_rate is None
        assert not any("spec_decode" in p for p in other.problems)
    finally:
        stop.set()
