"""Kopf's last-handled configuration in memory (controller/diffbase.py): nothing is written to
the object, a change after handling is seen, a new or forgotten object is a creation."""

import kopf

from tests.helpers import manifest
from tokenscale.controller.diffbase import MemoryDiffBaseStorage


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
