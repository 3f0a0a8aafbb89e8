"""A spec near the API server's 256 KiB annotation cap is handled once, without a traceback.

Kopf used to copy the whole object into one annotation after each handling; the API server
refused it ("metadata.annotations: Too long") and every change logged a traceback. Its
last-handled configuration is now kept in the operator's memory: nothing is written."""

from collections.abc import Callable

import pytest

from tests.helpers import manifest
from tests.integration.conftest import Objects
from tokenscale.controller.handlers import KOPF_PREFIX
from tokenscale.playground.processes import Process, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]  # over 30 s: `pytest -m slow`


def test_a_spec_over_256_kib_is_handled_and_so_is_its_next_change(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    env = [{"name": f"PROMPT_{i}", "value": "x" * 4096} for i in range(70)]
    body = manifest(deployment={"env": env})
    assert len(str(body)) > 256 * 1024
    op = start_operator(namespace)
    objects.create(body)
    wait_for(lambda: objects.deployment("test") is not None, 60, "Deployment")

    wait_for(lambda: (objects.get("test").get("status") or {}).get("plan"), 30, "the status")
    annotations = objects.get("test")["metadata"].get("annotations") or {}
    assert not [k for k in annotations if k.startswith(KOPF_PREFIX)], annotations
    objects.patch_spec("test", {"workload": {"rps": {"mean": 3}}})
    wait_for(
        lambda: (objects.get("test").get("status") or {}).get("observedGeneration") == 2,
        30,
        "the change handled",
    )
    assert "Too long" not in op.log_path.read_text(errors="replace")
