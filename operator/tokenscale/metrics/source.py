"""What the operator needs from a metrics backend."""

from typing import Protocol

from tokenscale.scaling.snapshot import Snapshot

ServiceKey = tuple[str, str]
"""(namespace, InferenceService name)."""


class MetricsSource(Protocol):
    def snapshots(self, namespaces: list[str] | None, now_s: float) -> dict[ServiceKey, Snapshot]:
        """One snapshot per InferenceService that has any vLLM series (None: all namespaces).

        Never raises for a backend failure: each snapshot says in ``problems`` what was
        missing, and a service without data is absent (the engine then holds).
        """
        ...
