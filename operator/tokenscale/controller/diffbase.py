"""Kopf's last-handled configuration kept as a digest, so a spec of any size can be handled.

Kopf stores the whole last-handled object (its "essence") as JSON in one annotation and diffs
the next version against it. The API server caps all annotations of an object together at
256 KiB, so a spec near that size could never be marked handled: every change logged a
"metadata.annotations: Too long" traceback and was handled again. The handlers here never read
the diff (every reconcile re-reads the whole object), so :class:`DigestDiffBaseStorage` stores
``sha256:<hex>`` of the essence instead (71 characters). When the stored digest matches the
current essence, it is that essence (nothing changed); when it does not, it is an empty one
(something changed: the update handler runs). An annotation in Kopf's JSON form, written before,
is still read as JSON.
"""

import hashlib
import json
from typing import Any, cast

import kopf

DIGEST = "sha256:"


class DigestDiffBaseStorage(kopf.AnnotationsDiffBaseStorage):
    def _digest(self, body: kopf.Body) -> str:
        essence: dict[str, Any] = json.loads(json.dumps(self.build(body=body)))
        annotations = (essence.get("metadata") or {}).get("annotations") or {}
        for key in [k for k in annotations if k.startswith(f"{self.prefix}/")]:
            del annotations[key]  # Kopf's own progress records are not configuration
        canonical = json.dumps(essence, sort_keys=True, separators=(",", ":"))
        return DIGEST + hashlib.sha256(canonical.encode()).hexdigest()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        for full_key in self.make_keys(self.key, body=body):
            stored = body.metadata.annotations.get(full_key)
            if stored is None:
                continue
            if stored.strip().startswith(DIGEST):
                if stored.strip() == self._digest(body):
                    return self.build(body=body)
                return cast(kopf.BodyEssence, {})
            return cast(kopf.BodyEssence, json.loads(stored))
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        digest = self._digest(body)
        for full_key in self.make_keys(self.key, body=body):
            patch.metadata.annotations[full_key] = digest
        self._store_marker(prefix=self.prefix, patch=patch, body=body)
