"""The InferencePool and to zero and back, against a real API server (1.20, with the Gateway
API Inference Extension's InferencePool CRD, 1.20-compatible copy) and a real Prometheus.

The operator renders the InferencePool (``spec.gateway.inferencePool.endpointPicker``) and the
API server accepts it against the extension's schema (which refuses a pool without ports).

An idle vLLM metrics emulator (gauges exported, counters flat) and an endpoint-picker metrics
emulator (tests/support/epp_emulator.py: the flow-control gauges for the service's
InferencePool), both scraped by Prometheus. The service has ``minReplicas: 0``:

1. idle engines but no endpoint-picker series yet (the activation source unread): never to
   zero, whatever the window;
2. the picker scraped, nothing queued: to zero after ``scaleToZero.idleSeconds``;
3. requests queued at the gateway: woken at once, from zero.
"""

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.epp_emulator import EndpointPickerEmulator
from tests.support.vllm_emulator import VllmMetricsEmulator
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, wait_for
from tokenscale.playground.prometheus import PrometheusServer
from tokenscale.render.inference_pool import GROUP, PLURAL, VERSION

pytestmark = pytest.mark.integration
IDLE_S = 10
SCALING: dict[str, Any] = {
    "minReplicas": 0,
    "maxReplicas": 8,
    "scaleToZero": {"idleSeconds": IDLE_S},
    "policy": {"scaleDownStabilizationSeconds": 4},
}
GATEWAY = {"inferencePool": {"endpointPicker": "chat-epp"}}


def _pool(objects: Objects, name: str = "test") -> dict[str, Any] | None:
    try:
        got: dict[str, Any] = objects.custom.get_namespaced_custom_object(
            GROUP, VERSION, objects.ns, PLURAL, name
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return got


def _replicas(objects: Objects) -> int | None:
    dep = objects.deployment("test")
    return None if dep is None else dep.spec.replicas


def _decision(objects: Objects) -> dict[str, Any]:
    return dict((objects.get("test").get("status") or {}).get("decision") or {})


def test_the_schema_is_enforced_a_pool_without_ports_is_refused(objects: Objects) -> None:
    """The installed CRD is the extension's schema, not a permissive stand-in."""
    bad = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "InferencePool",
        "metadata": {"name": "bad"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "targetPorts": []},
    }
    with pytest.raises(ApiException) as err:
        objects.custom.create_namespaced_custom_object(GROUP, VERSION, objects.ns, PLURAL, bad)
    assert err.value.status == 422
    assert "targetPorts" in str(err.value.body)


def test_idle_goes_to_zero_only_on_facts_and_the_gateway_queue_wakes_it(
    cluster: Cluster, objects: Objects, tmp_path: Path
) -> None:
    namespace = objects.ns
    prom = PrometheusServer(tmp_path / "prom").start()
    pod = VllmMetricsEmulator().start()  # idle: nothing recorded, ever
    epp = EndpointPickerEmulator(pool="test").start()
    op: Process | None = None
    try:
        op = cluster.operator(
            "operator-zero",
            namespace,
            2,
            tmp_path,
            "--prometheus-url",
            prom.url,
            "--metrics-gauge-window",
            "5s",
            "--metrics-rate-window",
            "10s",
        )
        objects.create(manifest(scaling=SCALING, gateway=GATEWAY))
        prom.add_target(pod.target, namespace, "test")
        wait_for(lambda: (_replicas(objects) or 0) >= 1, 60, "the first replicas")
        start = _replicas(objects)
        # the InferencePool, rendered for the service's pods and accepted by the extension's CRD
        wait_for(lambda: _pool(objects) is not None, 30, "the InferencePool")
        pool = _pool(objects)
        assert pool is not None
        assert pool["spec"]["endpointPickerRef"]["name"] == "chat-epp"
        assert pool["spec"]["selector"]["matchLabels"]["tokenscale.io/inferenceservice"] == "test"
        assert pool["metadata"]["ownerReferences"][0]["kind"] == "InferenceService"

        # 1. engines idle, the picker not scraped: the activation source is unread → no zero
        wait_for(
            lambda: (
                "gateway_queued" in str(objects.get("test")["status"].get("live") or {})
                or _decision(objects).get("cause") in ("Steady", "LowNotSustained", "ScaleDown")
            ),
            60,
            "decisions on the idle engines",
        )
        time.sleep(IDLE_S + 6)
        assert (_replicas(objects) or 0) >= 1, _decision(objects)
        scaling = objects.get("test")["status"].get("scaling") or {}
        assert "idleSinceSeconds" not in scaling, scaling
        assert _decision(objects).get("cause") != "ScaleToZero"

        # 2. the picker scraped, nothing queued: to zero after the idle window
        prom.add_labelled_target(epp.target, {"namespace": namespace})
        seen_idle = time.monotonic()
        wait_for(lambda: _replicas(objects) == 0, 90, f"zero after {IDLE_S} s idle (from {start})")
        assert time.monotonic() - seen_idle >= IDLE_S - 2
        # the status write follows the Deployment's apply in the same reconcile: read it after
        wait_for(
            lambda: _decision(objects).get("cause") in ("ScaleToZero", "AtZero"),
            15,
            "the decision that took it to zero, in the status",
        )
        zeroed = [e.message for e in objects.events("test") if "→0" in e.message]
        assert zeroed, [e.message for e in objects.events("test")]
        prom.remove_target(pod.target)  # at zero no engine runs
        live = objects.get("test")["status"]["live"]
        assert live["gatewayQueued"] == 0, live  # what would wake it, in the status

        # 3. requests held at the gateway: woken at once
        time.sleep(4)
        assert _replicas(objects) == 0
        epp.set(queued=3, saturation=1.0)
        woke = time.monotonic()
        wait_for(lambda: (_replicas(objects) or 0) >= 1, 30, "woken by the gateway queue")
        assert time.monotonic() - woke < 15
        # the wake's own decision (the next ones hold blind while the woken pods load)
        wait_for(
            lambda: any(
                "0→" in e.message and "waiting in front of the engines" in e.message
                for e in objects.events("test")
            ),
            30,
            "the wake's event",
        )
        assert op.alive()
    finally:
        epp.stop()
        pod.stop()
        prom.stop()
        if op is not None:
            op.stop()


def test_the_activation_query_alone_puts_to_sleep_and_wakes(
    cluster: Cluster, objects: Objects, tmp_path: Path
) -> None:
    """No InferencePool: the user's PromQL (here over an activator's gauge, the emulator's
    queue for a pool of another name) is the only wake-up source, read from the real
    Prometheus."""
    namespace = objects.ns
    prom = PrometheusServer(tmp_path / "prom").start()
    pod = VllmMetricsEmulator().start()
    activator = EndpointPickerEmulator(pool="activator").start()
    query = f'inference_extension_flow_control_queue_size{{namespace="{namespace}"}}'
    op: Process | None = None
    try:
        op = cluster.operator(
            "operator-activation",
            namespace,
            2,
            tmp_path,
            "--prometheus-url",
            prom.url,
            "--metrics-gauge-window",
            "5s",
            "--metrics-rate-window",
            "10s",
        )
        prom.add_target(pod.target, namespace, "test")
        prom.add_labelled_target(activator.target, {"namespace": namespace})
        objects.create(manifest(scaling={**SCALING, "activation": {"query": query}}))
        wait_for(lambda: _replicas(objects) == 0, 90, "zero after the idle window")
        assert objects.get("test")["status"]["live"]["activationDemand"] == 0
        assert _pool(objects) is None  # no endpoint picker named: no pool rendered
        prom.remove_target(pod.target)
        activator.set(queued=2, saturation=0.0)
        wait_for(lambda: (_replicas(objects) or 0) >= 1, 30, "woken by the activation query")
        assert op.alive()
    finally:
        activator.stop()
        pod.stop()
        prom.stop()
        if op is not None:
            op.stop()


@pytest.mark.slow  # one playground run, ≈100 s: `pytest -m slow`
def test_the_playground_idle_burst_goes_zero_to_n_to_zero(tmp_path: Path) -> None:
    """``tokenscale playground --load idle-burst`` headless: the gateway twin's queue wakes the
    service from zero, the idle window puts it back, and no request is lost."""
    from tokenscale.playground.load import shaped_trace  # noqa: PLC0415
    from tokenscale.playground.service import (  # noqa: PLC0415
        default_spec_path,
        load_service,
        scale_to_zero,
    )
    from tokenscale.playground.session import Playground, PlaygroundOptions  # noqa: PLC0415
    from tokenscale.playground.summary import wake_ttfts  # noqa: PLC0415

    service, _ = scale_to_zero(load_service(default_spec_path().read_text(), "default"), "d")
    trace = shaped_trace("idle-burst", 900.0, 0.25, 1.0, seed=0)
    opts = PlaygroundOptions(service=service, trace=trace, workdir=tmp_path / "pg", speed=20.0)
    notes: list[str] = []
    pg = Playground(opts, notes.append)
    try:
        pg.start_infrastructure()
        result = asyncio.run(pg.run())
    finally:
        pg.stop()
    messages = [e.message for e in result.events]
    print("\n".join(notes + messages))
    to_zero = [m for m in messages if "→0:" in m]
    wakes = [m for m in messages if m.startswith("Scaled 0→")]
    assert len(to_zero) >= 2, messages  # after each burst
    assert wakes, messages
    assert "gateway queue" in wakes[0]
    assert result.completed == result.sent
    cold = opts.cold_start_s
    costs = wake_ttfts(result)
    assert costs, "a request found the fleet at zero"
    # one cold start, plus the wall seconds the loop takes at ×20 (a 1 s scrape, a 1 s operator
    # cycle, the pod's creation and Ready: about 6 s wall, 120 modelled s), no more
    assert all(cold <= c <= cold + 6 * opts.speed for c in costs), costs
