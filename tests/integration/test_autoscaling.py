"""End to end: real API server + operator + real Prometheus scraping vLLM metrics emulators."""

import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import manifest
from tests.integration.conftest import GROUP, PLURAL, VERSION, Objects
from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.playground.processes import Process, free_port, wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.render.labels import CONFIG_HASH_ANNOTATION

pytestmark = pytest.mark.integration
WINDOW_S = 12  # the scale-down stabilisation window under test


def _spec() -> dict[str, Any]:
    return manifest(
        workload={"rps": {"mean": 0.5}},
        scaling={
            "minReplicas": 1,
            "maxReplicas": 6,
            "policy": {"scaleDownStabilizationSeconds": WINDOW_S},
        },
    )


def _replicas(objects: Objects) -> int | None:
    dep = objects.deployment("test")
    return None if dep is None else dep.spec.replicas


def test_kv_pressure_scales_up_and_relief_scales_down_after_the_window(
    start_metrics_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    emulators: Callable[..., VllmMetricsEmulator],
    tmp_path: Path,
) -> None:
    pod = emulators(namespace, "test")
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    pod.set_load(Load(rps=1, ttft_s=0.2, tpot_s=0.02))
    op = start_metrics_operator(namespace, prometheus.url)
    objects.create(_spec())
    wait_for(lambda: _replicas(objects) == 1, 60, "Deployment at the plan's 1 replica")
    wait_for(
        lambda: (objects.condition("test", "MetricsAvailable") or {}).get("status") == "True",
        60,
        "MetricsAvailable=True",
    )

    pod.set_state(running=40, waiting=0, kv_usage=0.95)  # KV pressure on the one replica
    wait_for(lambda: _replicas(objects) == 2, 60, "scaled up to 2")
    # the event is posted after the replicas are written (act: writes, then events)
    wait_for(
        lambda: any(e.reason == "Scaled" for e in objects.events("test")),
        30,
        "the Scaled event",
    )
    scaled = [e for e in objects.events("test") if e.reason == "Scaled"]
    assert scaled[-1].message.startswith("Scaled 1→2: kv_usage 0.95"), op.tail()
    # the event and the replicas are written before the status in the same reconcile
    wait_for(
        lambda: (objects.get("test")["status"].get("live") or {}).get("kvUsage") == 0.95,
        30,
        "status.live updated",
    )
    status = objects.get("test")["status"]
    assert status["live"]["kvUsage"] == 0.95
    assert status["ttftP99"].endswith(" live")  # the TTFT column: live when metrics exist
    assert status["decision"]["source"] == "metrics"
    assert any(d.startswith("KV cache near full") for d in status["diagnosis"])
    template_hash = objects.deployment("test").spec.template.metadata.annotations[
        "tokenscale.io/config-hash"
    ]

    pod.set_state(running=2, waiting=0, kv_usage=0.1)  # relief: every signal low
    relieved = time.monotonic()
    wait_for(
        lambda: (
            (objects.get("test")["status"].get("scaling") or {}).get("lowSinceSeconds") is not None
        ),
        30,
        "low streak started",
    )
    time.sleep(WINDOW_S / 2)
    assert _replicas(objects) == 2  # not before the window
    wait_for(lambda: _replicas(objects) == 1, 60, "scaled back down to 1")
    assert time.monotonic() - relieved >= WINDOW_S
    assert (
        objects.deployment("test").spec.template.metadata.annotations["tokenscale.io/config-hash"]
        == template_hash
    )  # replicas only: no pod restart


def test_prometheus_down_holds_replicas_and_says_why(
    start_metrics_operator: Callable[..., Process],
    objects: Objects,
    namespace: str,
    tmp_path: Path,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    own = PrometheusServer(tmp_path / "prom").start()
    try:
        pod = VllmMetricsEmulator().start()
        own.add_target(pod.target, namespace, "test")
        pod.set_state(running=40, waiting=0, kv_usage=0.97)
        op = start_metrics_operator(namespace, own.url)
        objects.create(_spec())
        wait_for(lambda: (_replicas(objects) or 0) >= 2, 60, "scaled up under pressure")
        own.stop()  # Prometheus goes away while the load (unseen) continues
        pod.set_state(running=0, waiting=0, kv_usage=0.0)
        # a read that ends while Prometheus shuts down may find it answering empty ("no
        # metrics"); the next read finds it unreachable
        wait_for(
            lambda: (
                "unreachable"
                in str((objects.condition("test", "MetricsAvailable") or {}).get("message"))
            ),
            60,
            "MetricsAvailable=False: Prometheus unreachable",
        )
        # from the moment it is blind (a decision made just before the stop may still land)
        held = _replicas(objects)
        assert held is not None
        assert held >= 2
        cond = objects.condition("test", "MetricsAvailable")
        assert cond is not None
        assert cond["status"] == "False"
        time.sleep(WINDOW_S + 4)
        assert _replicas(objects) == held  # nothing lost, nothing scaled down blind
        status = objects.get("test")["status"]
        assert status["decision"]["source"] == "hold"
        assert "live" not in status  # the status is replaced whole: no stale snapshot
        assert status["ttftP99"].endswith(" estimate")
        assert op.alive()
        pod.stop()
    finally:
        own.stop()


DOCUMENTED = {
    "tokenscale_replicas_desired": "gauge",
    "tokenscale_replicas": "gauge",
    "tokenscale_binding_constraint_info": "gauge",
    "tokenscale_scale_events": "counter",
    "tokenscale_decisions_held": "counter",
    "tokenscale_reconcile_duration_seconds": "histogram",
    "tokenscale_evaluation_duration_seconds": "histogram",
    "tokenscale_prometheus_query_errors": "counter",
    "tokenscale_latency_p99_seconds": "gauge",
    "tokenscale_kv_cache_usage_ratio": "gauge",
    "tokenscale_cost_per_million_output_tokens": "gauge",
    "tokenscale_status_writes": "counter",
}


def test_the_operators_own_metrics_are_scraped_with_their_types(
    start_metrics_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    pod = emulators(namespace, "test")
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    port = free_port()
    start_metrics_operator(namespace, prometheus.url, "--metrics-port", str(port))
    target = f"127.0.0.1:{port}"
    prometheus.add_target(target, None, None)
    try:
        objects.create(_spec())
        wait_for(lambda: _replicas(objects) == 1, 60, "the plan's replica")
        wait_for(
            lambda: (objects.condition("test", "MetricsAvailable") or {}).get("status") == "True",
            60,
            "metrics in use",
        )
        pod.set_state(running=40, waiting=0, kv_usage=0.97)
        wait_for(lambda: (_replicas(objects) or 0) >= 2, 60, "scaled up under pressure")
        selector = f'namespace="{namespace}", inferenceservice="test"'
        wait_for(
            lambda: prometheus.query(f"tokenscale_scale_events_total{{{selector}}}"),
            60,
            "scale events scraped",
        )
        metadata = prometheus.metadata()
        for family, kind in DOCUMENTED.items():
            names = [n for n in metadata if n in (family, f"{family}_total")]
            assert names, f"{family} was not scraped"
            assert metadata[names[0]][0]["type"] == kind, family
        total = prometheus.query(f'tokenscale_replicas_desired{{{selector}, constraint="total"}}')
        assert float(total[0]["value"][1]) == _replicas(objects)  # type: ignore[index]
        kv = prometheus.query(f"tokenscale_kv_cache_usage_ratio{{{selector}}}")
        assert float(kv[0]["value"][1]) == 0.97  # type: ignore[index]
        up = prometheus.query(f'tokenscale_scale_events_total{{{selector}, direction="up"}}')
        assert float(up[0]["value"][1]) >= 1  # type: ignore[index]
    finally:
        prometheus.remove_target(target)


def _reconciles(port: int) -> float:
    """The operator's own count of reconciles, from its metrics endpoint."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    line = next(
        ln
        for ln in text.splitlines()
        if ln.startswith("tokenscale_reconcile_duration_seconds_count")
    )
    return float(line.split()[-1])


def _count(port: int, name: str) -> float:
    """The sum over labels of one of the operator's own counters."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return sum(float(ln.split()[-1]) for ln in text.splitlines() if ln.startswith(name + "{"))


def test_deployment_events_between_two_reads_re_apply_the_stored_decision(
    start_metrics_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    """One decision per observation: owned-Deployment events between two metric reads —
    drift the operator repairs (a reconcile) and changes it ignores (a skipped wake-up) —
    change neither status.decision nor status.scaling and post no Scaled event."""
    pod = emulators(namespace, "test")
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    pod.set_load(Load(rps=1, ttft_s=0.2, tpot_s=0.02))
    port = free_port()
    interval = 30.0
    op = start_metrics_operator(
        namespace, prometheus.url, "--metrics-port", str(port), interval_s=interval
    )
    objects.create(_spec())

    def observed_at() -> str | None:
        return ((objects.get("test").get("status") or {}).get("decision") or {}).get("observedAt")

    def reads() -> float:  # the resync cycles begun (each one reads the metrics first)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
        return sum(
            float(ln.split()[-1])
            for ln in text.splitlines()
            if ln.startswith("tokenscale_evaluation_duration_seconds_count")
        )

    wait_for(lambda: observed_at() is not None, 90, "a decision on a metrics read")
    first = reads()
    # wait for the next read: its decision then stands for a whole interval (the status is
    # not rewritten for a read that changes nothing a reader acts on: count the cycles)
    wait_for(lambda: reads() > first, interval + 30, "the next read")
    time.sleep(2)  # its reconcile
    read_seen = time.monotonic()
    status = objects.get("test")["status"]
    decision, scaling = status["decision"], status["scaling"]
    scaled = sum(1 for e in objects.events("test") if e.reason == "Scaled")
    before, skipped = _reconciles(port), _count(port, "tokenscale_reconciles_skipped_total")
    for k in range(2):  # a foreign annotation: an event, nothing rendered changed (skipped)
        objects.apps.patch_namespaced_deployment(
            "test", namespace, {"metadata": {"annotations": {"example.com/poke": str(k)}}}
        )
        time.sleep(1.0)
    for k in range(2):  # the pod template drifts: an event that reconciles (and repairs)
        drift = {CONFIG_HASH_ANNOTATION: f"poked-{k}"}
        objects.apps.patch_namespaced_deployment(
            "test", namespace, {"spec": {"template": {"metadata": {"annotations": drift}}}}
        )
        time.sleep(1.0)
    wait_for(lambda: _reconciles(port) >= before + 2, 30, "the drift reconciled")
    wait_for(
        lambda: _count(port, "tokenscale_reconciles_skipped_total") >= skipped + 2,
        30,
        "the foreign annotations skipped",
    )
    assert time.monotonic() - read_seen < interval - 5, "a read came in between: too slow"
    template = objects.apps.read_namespaced_deployment("test", namespace).spec.template
    assert not template.metadata.annotations[CONFIG_HASH_ANNOTATION].startswith("poked")
    after = objects.get("test")["status"]
    assert after["decision"] == decision
    assert after["scaling"] == scaling
    assert sum(1 for e in objects.events("test") if e.reason == "Scaled") == scaled
    assert op.alive()


def test_an_edited_status_moves_the_fleet_no_faster_than_the_policy(
    start_metrics_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    """``kubectl patch --subresource=status`` of the engine's memory: decidedReplicas 40 and a
    rate of 1e300 neither take the Deployment past one step nor break the status write."""
    pod = emulators(namespace, "test")
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    pod.set_load(Load(rps=1, ttft_s=0.2, tpot_s=0.02))
    op = start_metrics_operator(namespace, prometheus.url)
    spec = _spec()
    spec["spec"]["scaling"].update(maxReplicas=64)
    spec["spec"]["scaling"]["policy"]["maxScaleUpStep"] = 2
    objects.create(spec)
    wait_for(lambda: _replicas(objects) == 1, 60, "the plan's replica")
    wait_for(
        lambda: (objects.get("test").get("status") or {}).get("scaling") is not None,
        60,
        "the engine's memory in status",
    )
    now = time.time()
    objects.custom.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "test",
        {
            "status": {
                "decidedReplicas": 40,
                "scaling": {"rate": {"levelRps": 1e300, "atSeconds": now}, "calibration": 1e300},
            }
        },
    )
    seen: list[int] = []
    deadline = time.monotonic() + 12  # six reads at --interval 2
    while time.monotonic() < deadline:
        seen.append(_replicas(objects) or 0)
        time.sleep(0.25)
    assert max(seen) <= 1 + 2, seen  # never 40, and at most one maxScaleUpStep
    wait_for(
        lambda: objects.get("test")["status"].get("decidedReplicas") == _replicas(objects),
        30,
        "status rewritten from the workload",
    )
    scaling = objects.get("test")["status"]["scaling"]
    assert scaling.get("rate", {}).get("levelRps", 0.0) < 1e6
    assert 0.5 <= scaling["calibration"] <= 1.5
    reasons = {e.reason for e in objects.events("test")}
    assert "ApplyFailed" not in reasons, op.tail()
    assert op.alive()
