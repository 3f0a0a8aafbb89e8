"""An informer-style cache: the objects the operator watches, kept current by watch events.

One LIST per kind (and namespace) at start-up primes it; afterwards the watch streams the
operator already has (Kopf's, for InferenceServices and the owned Deployments, Services,
PodDisruptionBudgets, LeaderWorkerSets and pods) feed it with :meth:`WatchStore.put` and
:meth:`WatchStore.drop`, and every successful write of the operator's own (apply, status)
is written through, so a reconcile that runs before the write's watch event arrives reads
what it wrote. Reads then cost no API call.

Ordering: an object replaces the cached one only when its ``resourceVersion`` is not older
(compared as integers: one etcd behind one API server hands them out in increasing order;
a non-numeric version always replaces). ``metadata.managedFields`` keeps only the operator's
own server-side-apply entry (drift is judged on the fields it applied, ``kube/drift.py``); the
other managers' entries, most of an object's size, are dropped. Keys and short strings are
interned: one copy of ``"containerPort"`` or ``"IfNotPresent"`` for the whole cache.
"""

import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from tokenscale.kube.client import FIELD_MANAGER

Key = tuple[str, str]
"""(namespace, name)"""


def _version(obj: dict[str, Any]) -> int | None:
    raw = (obj.get("metadata") or {}).get("resourceVersion")
    try:
        return int(str(raw))
    except (TypeError, ValueError):
        return None


REUSED_DEPTH = 2
"""How deep a new version's parts are compared with the cached version's (the top level, and
``metadata``'s, ``spec``'s and ``status``' own fields): deeper, a mismatch found high up is
compared again at every level below it. Equal is Python's (``1 == 1.0 == True``): a field
whose JSON type changed between two versions with equal values would keep the earlier type;
the API server's schemas fix every field's type."""

SHARED_TEXT = 64
"""Strings up to this long (every key, and values such as ``TCP``, ``True``, an image, a
label) are kept once for the whole cache (``sys.intern``), not once per object."""


def _shared(value: Any, like: Any = None, depth: int = 0) -> Any:
    """``value`` with its dict keys and short strings interned: a thousand Deployments parsed
    from a thousand answers repeat the same few hundred keys and values (half a cached
    object's memory). ``like``: the version cached before; a part of ``value`` within
    :data:`REUSED_DEPTH` levels that equals its part there is that part, already shared (a
    status update leaves the spec as it was: compared in C, not walked again). Leaves are
    handled inline, not by a call each: this walk is a tenth of the operator's CPU in a
    create wave."""
    if like is not None and depth <= REUSED_DEPTH and type(like) is type(value) and like == value:
        return like
    kind = type(value)
    if kind is dict:
        was = like if type(like) is dict else _NOTHING
        out = {}
        for k, v in value.items():
            key = sys.intern(k) if type(k) is str else k
            inner = type(v)
            if inner is str:
                out[key] = sys.intern(v) if len(v) <= SHARED_TEXT else v
            elif inner is dict or inner is list:
                out[key] = _shared(v, was.get(k), depth + 1)
            else:
                out[key] = v
        return out
    if kind is list:
        return [
            (sys.intern(v) if len(v) <= SHARED_TEXT else v)
            if type(v) is str
            else (_shared(v) if type(v) is dict or type(v) is list else v)
            for v in value
        ]
    if kind is str and len(value) <= SHARED_TEXT:
        return sys.intern(value)
    return value


_NOTHING: dict[str, Any] = {}


def shared(value: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``value`` whose keys and short strings are the ones the whole cache holds
    (for what the operator keeps per object beside the cache: the rendered objects a drift
    is judged against, Kopf's last-handled configuration)."""
    return dict(_shared(value))


def slim(obj: dict[str, Any], like: dict[str, Any] | None = None) -> dict[str, Any]:
    """The object with only the operator's own applied entry in ``metadata.managedFields``,
    its keys and short strings shared with the rest of the cache (and its unchanged parts
    with ``like``, the version cached before)."""
    meta = obj.get("metadata") or {}
    if "managedFields" not in meta:
        return dict(_shared(obj, like))
    ours = [
        e
        for e in meta.get("managedFields") or []
        if e.get("manager") == FIELD_MANAGER and e.get("operation") == "Apply"
    ]
    rest = {k: v for k, v in meta.items() if k != "managedFields"}
    kept = {**obj, "metadata": {**rest, "managedFields": ours} if ours else rest}
    return dict(_shared(kept, like))


def stub(obj: dict[str, Any]) -> dict[str, Any]:
    """What the cache keeps of an object someone else holds under a name we may render: who
    holds it (``controller/ownership.py::holder``), never its spec."""
    meta = obj.get("metadata") or {}
    managers = [
        {"manager": e.get("manager"), "operation": e.get("operation")}
        for e in meta.get("managedFields") or []
    ]
    kept = {k: meta[k] for k in ("name", "namespace", "resourceVersion", "uid") if k in meta}
    kept.update(ownerReferences=meta.get("ownerReferences") or [], labels=meta.get("labels") or {})
    return {"metadata": shared({**kept, "managedFields": managers})}


class WatchStore:
    """Objects by kind and (namespace, name); thread-safe.

    Besides the objects of ours, the owned kinds keep a :func:`stub` of every object by
    another hand in the watched namespaces (:meth:`put_foreign`), and how far each of their
    watch streams has delivered (:meth:`heard`): a name neither holds is known to be free of
    anything created before a given resourceVersion once the stream has reached it
    (:meth:`free`), so a create needs no GET of a name not yet cached."""

    def __init__(self, kinds: Iterable[str]) -> None:
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {k: {} for k in kinds}
        self._foreign: dict[str, dict[Key, dict[str, Any]]] = {k: {} for k in self._objects}
        self._heard: dict[tuple[str, str], int] = {}
        """(kind, namespace; "" for a cluster-wide stream): the newest resourceVersion up to
        which every object of ours and every foreign one of the kind is known."""
        self._lock = threading.Lock()
        self._primed = threading.Event()

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self._objects)

    def put(self, kind: str, obj: dict[str, Any]) -> bool:
        """Store ``obj`` unless the cached one is newer; True when stored."""
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        new = _version(obj)
        with self._lock:
            objects = self._objects[kind]
            old = objects.get(key)
            if old is not None and new is not None:
                have = _version(old)
                if have is not None and have > new:
                    return False
            objects[key] = slim(obj, old)
            self._foreign[kind].pop(key, None)  # ours now (labelled by us)
            return True

    def put_foreign(self, kind: str, obj: dict[str, Any]) -> None:
        """Note an object of ``kind`` that is not ours (no label of ours): a :func:`stub`."""
        meta = obj.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        new = _version(obj)
        with self._lock:
            old = self._foreign[kind].get(key)
            if old is not None and new is not None:
                have = _version(old)
                if have is not None and have > new:
                    return
            self._foreign[kind][key] = stub(obj)
            if key in self._objects[kind]:  # our label was taken off
                have = _version(self._objects[kind][key])
                if have is None or new is None or have <= new:
                    self._objects[kind].pop(key)

    def foreign(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._foreign[kind].get((namespace, name))

    def heard(self, kind: str, namespace: str, resource_version: Any) -> None:
        """The watch stream of ``kind`` for ``namespace`` ("": every namespace) delivered
        ``resource_version``, or a LIST of ours and one of the rest were as of it: every
        object of the kind up to it is in this store, ours whole, the others as stubs."""
        try:
            version = int(str(resource_version))
        except ValueError:
            return
        with self._lock:
            if version > self._heard.get((kind, namespace), -1):
                self._heard[(kind, namespace)] = version

    def free(self, kind: str, namespace: str, name: str, since: str | None) -> bool:
        """Whether ``name`` is known to be held by nobody as of resourceVersion ``since``
        (the InferenceService that renders it: what was created before it is known): no
        object of ours and no foreign one, and the kind's stream (or priming LISTs) has
        delivered everything up to ``since``. False when unknown: ask the API server."""
        try:
            wanted = int(str(since))
        except ValueError:
            return False
        with self._lock:
            key = (namespace, name)
            if key in self._objects[kind] or key in self._foreign[kind]:
                return False
            reached = max(self._heard.get((kind, namespace), -1), self._heard.get((kind, ""), -1))
            return reached >= wanted

    def drop(self, kind: str, namespace: str, name: str, resource_version: str | None) -> None:
        """Forget an object (a DELETED event), unless a newer one replaced it since."""
        with self._lock:
            self._foreign[kind].pop((namespace, name), None)
            objects = self._objects[kind]
            old = objects.get((namespace, name))
            if old is None:
                return
            have, gone = _version(old), None
            try:
                gone = int(resource_version) if resource_version is not None else None
            except ValueError:
                gone = None
            if have is not None and gone is not None and have > gone:
                return
            objects.pop((namespace, name), None)

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._objects[kind].get((namespace, name))

    def keys(self, kind: str) -> list[Key]:
        with self._lock:
            return sorted(self._objects[kind])

    def select(self, kind: str, namespace: str, labels: dict[str, str]) -> list[dict[str, Any]]:
        """Objects of ``kind`` in ``namespace`` whose labels include ``labels``."""
        with self._lock:
            candidates = [o for (ns, _), o in self._objects[kind].items() if ns == namespace]
        out = []
        for obj in candidates:
            have = (obj.get("metadata") or {}).get("labels") or {}
            if all(have.get(k) == v for k, v in labels.items()):
                out.append(obj)
        return out

    def count(self, kind: str) -> int:
        with self._lock:
            return len(self._objects[kind])

    def prime(self, listers: dict[str, Callable[[], list[dict[str, Any]]]]) -> None:
        """Fill every kind from one LIST each, then mark the store ready."""
        for kind, lister in listers.items():
            for obj in lister():
                self.put(kind, obj)
        self._primed.set()

    def wait_primed(self, timeout_s: float | None = None) -> bool:
        return self._primed.wait(timeout_s)

    @property
    def primed(self) -> bool:
        return self._primed.is_set()
