"""What the operator needs from a metrics backend."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from tokenscale.scaling.snapshot import Snapshot

ServiceKey = tuple[str, str]
"""(namespace, InferenceService name)."""


class QueryErrorKind(StrEnum):
    """Why one query failed (the ``kind`` label of ``tokenscale_prometheus_query_errors``)."""

    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    HTTP = "http"
    """Prometheus answered, with an error status."""
    ANSWER = "answer"
    """A 200 whose body is not a vector of samples (``metrics/answers.py``)."""
    VALUE = "value"
    """A sample that is not finite or out of its plausible range (``metrics/bounds.py``)."""
    OTHER = "other"


@dataclass(frozen=True)
class QueryError:
    """One failed query: which, why (typed) and the words for logs and status."""

    query: str
    kind: QueryErrorKind
    message: str


class MetricsSource(Protocol):
    def snapshots(
        self, namespaces: list[str] | None, now_s: float, dispersion: bool = False
    ) -> dict[ServiceKey, Snapshot]:
        """One snapshot per InferenceService that has any vLLM series (None: all namespaces).

        Never raises for a backend failure: each snapshot says in ``problems`` what was
        missing, and a service without data is absent (the engine then holds).
        """
        ...
