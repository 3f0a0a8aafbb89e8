"""Kopf's last-handled configuration in memory (controller/diffbase.py): nothing is written to
the object, a change after handling is seen, a new or forgotten object is a creation."""

import kopf

from tests.helpers import manifest
from tokenscale.controller.diffbase import MemoryDiffBaseStorage
from tokenscale.controller.progress import ProgressAnnotations


def _body(uid: str = "u-1", rps: float = 2.0) -> kopf.Body:
    raw = manifest(workload={"rps": {"mean": rps}})
    raw["metadata"]["uid"] = uid
    return kopf.Body(raw)


def _handled(storage: MemoryDiffBaseStorage, body: kopf.Body) -> kopf.Patch:
    patch = kopf.Patch()
    storage.store(body=body, patch=patch, essence=storage.build(body=body))
    return patch


def test_handling_writes_nothing_to_the_object() -> None:
    storage = MemoryDiffBaseStorage()
    body = _body()
    assert storage.fetch(body=body) is None  # never handled: a creation
    assert not _handled(storage, body)  # an empty patch: Kopf sends no PATCH
    assert storage.fetch(body=body) == storage.build(body=body)  # unchanged: no diff


def test_a_change_after_handling_is_seen_and_a_new_object_is_a_creation() -> None:
    storage = MemoryDiffBaseStorage()
    _handled(storage, _body())
    changed = _body(rps=99.0)
    old = storage.fetch(body=changed)
    assert old is not None
    assert old != storage.build(body=changed)
    assert storage.fetch(body=_body(uid="u-2")) is None  # same name, another object
    storage.forget("u-1")
    assert storage.fetch(body=_body()) is None
    assert len(storage) == 0


def test_an_annotation_an_earlier_version_wrote_is_not_configuration() -> None:
    storage = MemoryDiffBaseStorage()
    body = _body()
    _handled(storage, body)
    raw = dict(body)
    raw["metadata"] = {
        **raw["metadata"],
        "annotations": {
            "kopf.tokenscale.io/kopf-managed": "yes",
            "kopf.tokenscale.io/last-handled-configuration": "sha256:00",
        },
    }
    later = kopf.Body(raw)
    assert storage.fetch(body=later) == storage.build(body=later)


def test_the_essence_is_the_one_kopf_builds_without_copying_the_status() -> None:
    raw = dict(_body())
    raw["status"] = {"plan": {"replicas": 3}, "conditions": [{"type": "Ready"}]}
    raw["metadata"] = {
        **raw["metadata"],
        "labels": {"team": "a"},
        "annotations": {
            "note": "kept",
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            "kopf.tokenscale.io/kopf-managed": "yes",
        },
        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        "resourceVersion": "7",
    }
    body = kopf.Body(raw)
    ours = MemoryDiffBaseStorage().build(body=body)
    assert ours == kopf.DiffBaseStorage.build(MemoryDiffBaseStorage(), body=body)  # Kopf's own
    assert "status" not in ours
    assert ours["metadata"] == {
        "labels": {"team": "a"},
        "annotations": {"note": "kept"},
    }
    raw["spec"]["workload"]["rps"]["mean"] = 7.0  # the essence is a copy, not a view
    assert ours["spec"]["workload"]["rps"]["mean"] == 2.0


def test_progress_is_cleared_as_kopf_clears_it_and_copied_only_when_there_is_some() -> None:
    storage = MemoryDiffBaseStorage()
    progress = ProgressAnnotations(prefix="kopf.tokenscale.io")
    plain = storage.build(body=_body())
    assert progress.clear(essence=plain) is plain  # nothing to clear: no copy
    raw = dict(_body())
    raw["metadata"] = {
        **raw["metadata"],
        "annotations": {"note": "kept", "kopf.tokenscale.io/created": '{"retries": 1}'},
    }
    retried = storage.build(body=kopf.Body(raw))
    cleared = progress.clear(essence=retried)
    assert cleared == kopf.AnnotationsProgressStorage.clear(progress, essence=retried)
    assert cleared["metadata"]["annotations"] == {"note": "kept"}
    assert "kopf.tokenscale.io/created" in retried["metadata"]["annotations"]  # a copy
