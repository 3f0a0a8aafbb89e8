"""Kopf's last-handled configuration as a digest: a spec near 256 KiB is still marked handled."""

import json
from typing import Any

import kopf

from tests.helpers import manifest
from tokenscale.controller.diffbase import DigestDiffBaseStorage
from tokenscale.controller.handlers import KOPF_PREFIX

KEY = f"{KOPF_PREFIX}/last-handled-configuration"
ANNOTATIONS_LIMIT = 256 * 1024  # the API server's cap on all annotations of an object


def _storage() -> DigestDiffBaseStorage:
    return DigestDiffBaseStorage(prefix=KOPF_PREFIX, key="last-handled-configuration")


def _big() -> dict[str, Any]:
    body = manifest()
    body["metadata"]["annotations"] = {"note": "x" * 200_000}  # a large, valid object
    return body


def _stored(storage: DigestDiffBaseStorage, raw: dict[str, Any]) -> dict[str, Any]:
    patch = kopf.Patch()
    storage.store(body=kopf.Body(raw), patch=patch, essence=storage.build(body=kopf.Body(raw)))
    annotations = dict(patch.get("metadata", {}).get("annotations", {}))
    return {
        **raw,
        "metadata": {
            **raw["metadata"],
            "annotations": {**raw["metadata"].get("annotations", {}), **annotations},
        },
    }


def test_a_big_object_is_marked_handled_within_the_annotation_limit() -> None:
    storage = _storage()
    raw = _big()
    kopf_json = json.dumps(storage.build(body=kopf.Body(raw)), separators=(",", ":"))
    own = sum(len(k) + len(v) for k, v in raw["metadata"]["annotations"].items())
    assert own + len(kopf_json) > ANNOTATIONS_LIMIT  # Kopf's JSON form would not fit
    handled = _stored(storage, raw)
    assert len(handled["metadata"]["annotations"][KEY]) < 100
    body = kopf.Body(handled)
    assert storage.fetch(body=body) == storage.build(body=body)  # unchanged: no diff


def test_a_change_after_handling_is_seen() -> None:
    storage = _storage()
    handled = _stored(storage, manifest())
    handled["spec"]["workload"]["rps"]["mean"] = 99
    body = kopf.Body(handled)
    old = storage.fetch(body=body)
    assert old is not None
    assert old != storage.build(body=body)


def test_kopfs_json_form_written_earlier_is_still_read() -> None:
    storage = _storage()
    raw = manifest()
    essence = storage.build(body=kopf.Body(raw))
    raw["metadata"]["annotations"] = {KEY: json.dumps(essence)}
    assert storage.fetch(body=kopf.Body(raw)) == essence
    assert storage.fetch(body=kopf.Body(manifest())) is None  # never handled: a creation
