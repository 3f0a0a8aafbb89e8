"""Kopf's record of a handler's retries, kept in annotations, cleared without a deep copy.

Kopf clears its progress annotations from the two essences it compares at every event of an
InferenceService (the one it last handled and the one it just built) and deep-copies each to
do so, whether there is anything to clear or not: 6 % of the operator's CPU in a create wave.
Both essences are fresh for each event (``controller/diffbase.py`` builds one and parses the
other from JSON), so when no annotation of the prefix is in them there is nothing to clear
and nothing to protect: :class:`ProgressAnnotations` returns the essence as it is. With one
(a handler that failed and is being retried), Kopf's own copy-and-clear runs.
"""

from typing import Any

import kopf


class ProgressAnnotations(kopf.AnnotationsProgressStorage):
    """Kopf's annotations progress storage; :meth:`clear` copies only what it changes."""

    def clear(self, *, essence: kopf.BodyEssence) -> kopf.BodyEssence:
        annotations: dict[str, Any] = (essence.get("metadata") or {}).get("annotations") or {}
        if any(key.startswith(f"{self.prefix}/") for key in annotations):
            return super().clear(essence=essence)
        return essence
