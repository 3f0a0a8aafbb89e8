"""Parse and plan an InferenceService once per distinct spec, not once per reconcile.

Parsing and planning are pure functions of the spec and the name (the planner reads nothing
else), so their result, or the :class:`~tokenscale.api.errors.SpecError` they raised, is
remembered under the spec's canonical JSON (and the key of any adjustment the caller makes to
the spec it plans, e.g. a speculative acceptance rate vLLM measured). A ``spec.profileRef`` or
``spec.model.hfConfigRef`` is the exception: what it names lives in a ConfigMap that can change
without the spec changing, so such a service is parsed, its ConfigMap read and planned every
time.

Services whose parsed specs are equal share one plan (named for each): a fleet stamped from a
few templates plans each template once. Bounded: the least recently used entries go first
past ``size`` (default 4,096 specs). A remembered plan keeps no predicted load-test curve
(``Plan.curve``, read by the CLI only).
"""

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceService, InferenceServiceSpec
from tokenscale.api.manifest import parse_inference_service
from tokenscale.planning import Plan, plan_service

Planned = tuple[InferenceService, Plan]
Profiled = Callable[[InferenceService], InferenceService]
"""Inline a ``spec.profileRef`` and a ``spec.model.hfConfigRef`` (reads their ConfigMaps;
raises SpecError)."""
Adjusted = Callable[[InferenceServiceSpec], InferenceServiceSpec]
"""What the plan is made of, given the service's spec (the returned service keeps its own)."""


def reads_config_maps(spec: Any) -> bool:
    """The spec names a ConfigMap whose content the plan depends on."""
    if not isinstance(spec, Mapping):
        return False
    model = spec.get("model")
    return spec.get("profileRef") is not None or (
        isinstance(model, Mapping) and model.get("hfConfigRef") is not None
    )


def _same(spec: InferenceServiceSpec) -> InferenceServiceSpec:
    return spec


def _essence(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the parser reads: the kind, the name and namespace, the spec."""
    meta = body.get("metadata") or {}
    return {
        "apiVersion": body.get("apiVersion", "tokenscale.io/v1alpha1"),
        "kind": body.get("kind", "InferenceService"),
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "spec": body.get("spec"),
    }


class PlanMemo:
    """``(service, plan)`` by canonical spec JSON; thread-safe; counts hits and misses."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._entries: OrderedDict[str, Planned | SpecError] = OrderedDict()
        self._plans: OrderedDict[str, Plan] = OrderedDict()
        """Plans by parsed spec and adjustment, shared by services that differ in name only."""
        self.plans_made = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def planned(
        self,
        body: Mapping[str, Any],
        profiled: Profiled,
        adjusted: Adjusted = _same,
        adjustment: str = "",
    ) -> Planned:
        """The parsed service (ConfigMaps inlined) and the plan of ``adjusted(its spec)``;
        ``adjustment`` names the adjustment in the memo's key. Raises SpecError."""
        doc = _essence(body)
        if reads_config_maps(doc["spec"]):
            service = profiled(parse_inference_service(doc))
            return service, plan_service(adjusted(service.spec), service.metadata.name)
        key = json.dumps([doc, adjustment], sort_keys=True, separators=(",", ":"), default=str)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                self.hits += 1
        if found is None:
            found = self._compute(doc, profiled, adjusted, adjustment)
            with self._lock:
                self.misses += 1
                self._entries[key] = found
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        if isinstance(found, SpecError):
            raise SpecError(found.issues)  # a fresh one: a raised error keeps its traceback
        return found

    def _compute(
        self, doc: dict[str, Any], profiled: Profiled, adjusted: Adjusted, adjustment: str
    ) -> Planned | SpecError:
        """Parse, then plan once per distinct parsed spec: services that differ only in their
        name share one plan (the planner reads the name only to name the plan)."""
        try:
            service = profiled(parse_inference_service(doc))
            key = json.dumps(
                [service.spec.model_dump(mode="json", by_alias=True), adjustment],
                sort_keys=True,
                separators=(",", ":"),
            )
            with self._lock:
                shared = self._plans.get(key)
                if shared is not None:
                    self._plans.move_to_end(key)
            if shared is None:
                # the predicted load-test curve is `tokenscale plan`'s table: no reconcile
                # reads it, and it is a third of what a remembered plan costs (14 of 45 KB)
                planned = plan_service(adjusted(service.spec), service.metadata.name)
                shared = planned.model_copy(update={"curve": []})
                with self._lock:
                    self.plans_made += 1
                    self._plans[key] = shared
                    while len(self._plans) > self.size:
                        self._plans.popitem(last=False)
        except SpecError as err:
            return err
        return service, shared.model_copy(update={"name": service.metadata.name})


PLANS = PlanMemo()
"""The operator's memo (one per process)."""
