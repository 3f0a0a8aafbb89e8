"""`spec.model.hfConfigRef` on a real API server: the operator reads the model's config.json
from a ConfigMap (its one ConfigMap `get`), plans from it, and says how to fix a missing one."""

import json
from collections.abc import Callable

from kubernetes import client

from tests.helpers import HF_CONFIGS, manifest
from tests.integration.conftest import Objects
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service
from tokenscale.playground.processes import Process, wait_for

QWEN = json.loads((HF_CONFIGS / "Qwen2.5-7B-Instruct.json").read_text())


def test_the_config_is_read_from_its_config_map(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    start_operator(namespace)
    model = {"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": None}
    objects.create(manifest(model={**model, "hfConfigRef": {"configMapName": "qwen"}}))
    wait_for(
        lambda: (objects.condition("test", "PlanFeasible") or {}).get("status") == "False",
        30,
        "PlanFeasible=False without the ConfigMap",
    )
    cond = objects.condition("test", "PlanFeasible")
    assert cond is not None
    assert "spec.model.hfConfigRef" in cond["message"]
    assert "kubectl create configmap qwen --from-file=config.json=config.json" in cond["message"]
    objects.core.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="qwen"), data={"config.json": json.dumps(QWEN)}
        ),
    )
    wait_for(lambda: objects.deployment("test") is not None, 60, "the Deployment")
    wait_for(
        lambda: (objects.condition("test", "PlanFeasible") or {}).get("status") == "True",
        30,
        "PlanFeasible=True from the ConfigMap",
    )
    # the same plan as the config inline
    (inline,) = parse_manifests(json.dumps(manifest(model={**model, "hfConfig": QWEN})))
    expected = plan_service(inline.spec, "test")
    assert objects.deployment("test").spec.replicas == expected.replicas.total  # type: ignore[union-attr]
