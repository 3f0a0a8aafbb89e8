"""`spec.lora` on a real API server: the adapters' adapter_config.json read from ConfigMaps
(`adapterConfigRef`), the LoRA flags and `--lora-modules` rendered into the Deployment from
them, a changed adapter list rolling the workload exactly once, and vLLM's own parser
accepting every command line rendered (when a Python with vLLM is found, as
tests/integration/test_vllm_args.py)."""

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tests.support.vllm_args import CommandLine, parse_in_vllm, serve_argv
from tests.support.vllm_cpu import vllm_python
from tests.support.vllm_emulator import Load, VllmMetricsEmulator
from tokenscale.playground.processes import Process, wait_for
from tokenscale.playground.prometheus import PrometheusServer

BASE = "meta-llama/Llama-3.1-8B-Instruct"
#: The command lines the operator rendered in this module's first test.
RENDERED: list[CommandLine] = []


def _adapter(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "source": f"/adapters/{name}",
        "adapterConfigRef": {"configMapName": f"{name}-config"},
    }


def _config_map(objects: Objects, name: str, rank: int) -> None:
    config = {
        "r": rank,
        "lora_alpha": 2 * rank,
        "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
        "base_model_name_or_path": BASE,
        "peft_type": "LORA",
    }
    objects.core.create_namespaced_config_map(
        objects.ns,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=f"{name}-config"),
            data={"adapter_config.json": json.dumps(config)},
        ),
    )


def _args(objects: Objects) -> list[str]:
    d = objects.deployment("test")
    return list(d.spec.template.spec.containers[0].args) if d is not None else []


def _replica_sets(objects: Objects) -> list[Any]:
    return [
        rs
        for rs in objects.apps.list_namespaced_replica_set(objects.ns).items
        if any(o.name == "test" for o in rs.metadata.owner_references or [])
    ]


def test_adapters_from_config_maps_render_and_a_new_list_rolls_once(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    for name, rank in (("sql", 8), ("support", 32)):
        _config_map(objects, name, rank)
    start_operator(namespace)
    lora = {"adapters": [_adapter("sql"), _adapter("support")], "maxLoras": 2}
    objects.create(manifest(lora=lora, cost={"gpuHourPrice": 3.0}))
    wait_for(lambda: "--enable-lora" in _args(objects), 60, "the LoRA flags in the Deployment")
    args = _args(objects)
    at = args.index("--enable-lora")
    # the rank comes from the ConfigMaps: the largest (32) is a --max-lora-rank choice
    assert args[at : at + 10] == [
        "--enable-lora",
        "--max-loras",
        "2",
        "--max-lora-rank",
        "32",
        "--max-cpu-loras",
        "2",
        "--lora-modules",
        "sql=/adapters/sql",
        "support=/adapters/support",
    ]
    # the plan's LoRA cost in status: two adapters, ranks 8 and 32, maxLoras as given
    wait_for(
        lambda: ((objects.get("test").get("status") or {}).get("plan") or {}).get("lora"),
        30,
        "status.plan.lora",
    )
    cost = objects.get("test")["status"]["plan"]["lora"]
    assert cost.startswith("2 adapters, ranks 8–32: KV pool −"), cost
    assert "(maxLoras 2); spec.lora.maxLoras" in cost, cost
    first = objects.deployment("test")
    generation = first.metadata.generation
    wait_for(lambda: len(_replica_sets(objects)) == 1, 30, "the first ReplicaSet")

    # a third adapter: the template changes once, one new ReplicaSet, then nothing moves
    _config_map(objects, "legal", 16)
    lora["adapters"] = [*lora["adapters"], _adapter("legal")]
    objects.patch_spec("test", {"lora": lora})
    wait_for(lambda: "legal=/adapters/legal" in _args(objects), 60, "the new adapter rendered")
    wait_for(lambda: len(_replica_sets(objects)) == 2, 30, "the rolled ReplicaSet")
    rolled = objects.deployment("test").metadata.generation
    assert rolled == generation + 1
    time.sleep(8)  # several reconciles (resync 2 s): the same template, no further roll
    assert objects.deployment("test").metadata.generation == rolled
    assert len(_replica_sets(objects)) == 2

    # kept for vLLM's parser (the next test): the command line the operator rendered
    container = objects.apps.read_namespaced_deployment("test", namespace).to_dict()["spec"][
        "template"
    ]["spec"]["containers"][0]
    argv = serve_argv(_camel(container), None)
    assert argv is not None
    RENDERED.append(CommandLine("integration", "Deployment/test vllm", tuple(argv)))


def test_vllms_parser_accepts_the_rendered_command_line() -> None:
    python = vllm_python()
    if python is None:
        pytest.skip("no Python with vllm (set TOKENSCALE_VLLM_PYTHON to a venv with vllm-cpu)")
    assert RENDERED, "run with the test above, which renders the command line"
    for verdict in parse_in_vllm(python, RENDERED):
        assert verdict.error is None, verdict.error


def test_a_missing_adapter_config_map_names_the_field(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    start_operator(namespace)
    objects.create(manifest(lora={"adapters": [_adapter("gone")]}))
    wait_for(
        lambda: (objects.condition("test", "PlanFeasible") or {}).get("status") == "False",
        30,
        "PlanFeasible=False without the adapter's ConfigMap",
    )
    cond = objects.condition("test", "PlanFeasible")
    assert cond is not None
    assert "spec.lora.adapters[0].adapterConfigRef" in cond["message"]
    assert "kubectl create configmap gone-config" in cond["message"]


def _camel(container: dict[str, Any]) -> dict[str, Any]:
    """The Python client's snake_case container as the API's camelCase keys serve_argv reads
    (command, args and env are all it looks at)."""
    return {"command": container.get("command"), "args": container.get("args"), "env": []}


def _signal(objects: Objects, name: str) -> dict[str, Any] | None:
    decision = (objects.get("test").get("status") or {}).get("decision") or {}
    return next((x for x in decision.get("signals") or [] if x["name"] == name), None)


def test_a_queue_waiting_for_adapter_slots_is_told_from_a_compute_queue(
    start_metrics_operator: Callable[..., Process],
    prometheus: PrometheusServer,
    objects: Objects,
    namespace: str,
    emulators: Callable[..., VllmMetricsEmulator],
) -> None:
    """Real Prometheus scraping an engine that reports vllm:lora_requests_info: while adapters
    wait with both slots in use, status.decision.signals shows lora_slot_wait and the queue
    signal asks for one replica more, naming spec.lora.maxLoras."""
    pod = emulators(namespace, "test")
    pod.set_state(running=4, waiting=0, kv_usage=0.3)
    pod.set_load(Load(rps=0.3, ttft_s=0.2, tpot_s=0.02))
    pod.set_lora(["a0"], [], 2)
    start_metrics_operator(namespace, prometheus.url)
    adapters = [{"name": f"a{i}", "source": f"/adapters/a{i}", "rank": 8} for i in range(6)]
    objects.create(
        manifest(
            # 0.3 req/s plans one replica (0.66 of one at the LoRA knee) and the engine serves
            # that rate, so no signal but the queue asks for more: the reason below names it
            workload={"rps": {"mean": 0.3}},
            scaling={"minReplicas": 1, "maxReplicas": 6},
            lora={"adapters": adapters, "maxLoras": 2},
        )
    )
    wait_for(
        lambda: (_signal(objects, "lora_slot_wait") or {}).get("level") == "low",
        90,
        "lora_slot_wait low: no adapter waits",
    )
    time.sleep(1.1)  # a newer second for the next series' value
    pod.set_lora(["a0", "a1"], ["a2", "a3", "a4"], 2)
    pod.set_state(running=8, waiting=40, kv_usage=0.4)
    wait_for(
        lambda: (_signal(objects, "lora_slot_wait") or {}).get("value") == 1.0,
        90,
        "lora_slot_wait 1.0: the one engine waits for a slot",
    )
    slot = _signal(objects, "lora_slot_wait")
    assert slot is not None
    assert slot["level"] == "normal"
    assert slot["replicas"] == 1  # never asks for replicas itself
    # the queue reads high from its second sighting (scaling/headroom.py); at one replica its
    # ratio (capped at ×2) and "one more" agree, so the reason below tells the path apart
    # (tests/unit/test_lora_live.py checks the step at four replicas)
    # the queue signal: queue_s (the spec has a TTFT SLO: the queue read as seconds of work)
    wait_for(
        lambda: (_signal(objects, "queue_s") or {}).get("level") == "high",
        60,
        "the queue signal high",
    )
    queue = _signal(objects, "queue_s")
    assert queue is not None
    assert queue["replicas"] == 2
    # the fleet takes the step. Which reason the Scaled event carries is a race: the queue's
    # "one more" (its reason names the adapter slots and spec.lora.maxLoras) and the SLO
    # headroom its breach raised (the model's need ×2 at one replica) both ask for 2, and either
    # decision may write first (CI saw "model needs 2 (throughput)"); the signal's own reason is
    # not in status (tests/unit/test_lora_live.py checks it)
    wait_for(
        lambda: any(e.reason == "Scaled" for e in objects.events("test")),
        60,
        "the Scaled event",
    )
    scaled = [e.message for e in objects.events("test") if e.reason == "Scaled"]
    assert scaled[-1].startswith("Scaled 1→2"), scaled
    assert "wait for an adapter slot" in scaled[-1] or "model needs 2" in scaled[-1], scaled
    if "wait for an adapter slot" in scaled[-1]:
        assert "spec.lora.maxLoras" in scaled[-1], scaled
