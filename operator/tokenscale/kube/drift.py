"""PURE: does the live object still carry everything we rendered? (drift detection)

``desired ⊆ live``, compared the way server-side apply merges: every field we set must be
present with the same value; fields the API server adds (defaults, status, managedFields) are
ignored. Atomic lists (``args``, ``command``) compare element-wise, so an added, removed or
reordered argument is drift. Associative lists (``x-kubernetes-list-type: map``: ports by port
and protocol, containers, env and volumes by name, …) compare item by key: an item another field
manager added (an extra Service port) is not drift, because applying again would not remove it;
an extra item is drift only when our field manager owns it (``metadata.managedFields``) or when
the live object carries no managedFields to tell. Quantities compare by value ("1Gi" ==
"1024Mi").
"""

import json
from decimal import Decimal, InvalidOperation
from typing import Any

LIST_MAP_KEYS: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "env": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "imagePullSecrets": ("name",),
    "ownerReferences": ("uid",),
    "hostAliases": ("ip",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
}
"""Merge keys of the associative lists (Kubernetes' OpenAPI ``x-kubernetes-list-map-keys``);
``ports`` is keyed by ``containerPort`` or ``port``, with ``protocol``."""
_DEFAULTS = {"protocol": "TCP"}

_SUFFIX: dict[str, Decimal] = {
    **{k: Decimal(2) ** (10 * n) for n, k in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"), 1)},
    **{k: Decimal(10) ** (3 * n) for n, k in enumerate(("k", "M", "G", "T", "P", "E"), 1)},
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
}


def _quantity(value: str) -> Decimal | None:
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if value.endswith(suffix):
            number = value[: -len(suffix)]
            try:
                return Decimal(number) * _SUFFIX[suffix]
            except InvalidOperation:
                return None
    try:
        return Decimal(value)
    except InvalidOperation:
        return None


def _same_scalar(want: Any, have: Any) -> bool:
    if want == have:
        return True
    if isinstance(want, str) and isinstance(have, str | int | float):
        a, b = _quantity(want), _quantity(str(have))
        return a is not None and a == b
    return False


def managed_by(live: dict[str, Any] | None, manager: str) -> dict[str, Any] | None:
    """The fields ``manager`` applied to ``live`` (``fieldsV1``), or None when the object
    carries no managedFields."""
    entries = ((live or {}).get("metadata") or {}).get("managedFields")
    if not entries:
        return None
    owned: dict[str, Any] = {}
    for entry in entries:
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            owned = _merge(owned, entry.get("fieldsV1") or {})
    return owned


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        out[key] = _merge(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


def _list_keys(field: str, items: list[Any]) -> tuple[str, ...] | None:
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    if field == "ports":
        return ("containerPort" if "containerPort" in items[0] else "port", "protocol")
    return LIST_MAP_KEYS.get(field)


def _item_key(item: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: item.get(k, _DEFAULTS.get(k)) for k in keys}


def _owned_item(owned: dict[str, Any] | None, key: dict[str, Any]) -> dict[str, Any] | None:
    """The managed subtree of a list-map item (``k:{"port":8000,"protocol":"TCP"}``)."""
    for name, sub in (owned or {}).items():
        if name.startswith("k:"):
            try:
                if json.loads(name[2:]) == key:
                    return sub if isinstance(sub, dict) else {}
            except ValueError:
                continue
    return None


def _child(owned: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    if owned is None:
        return None
    sub = owned.get(f"f:{key}")
    return sub if isinstance(sub, dict) else {}


def _list_map_differences(
    desired: list[Any],
    live: list[Any],
    keys: tuple[str, ...],
    path: str,
    owned: dict[str, Any] | None,
) -> list[str]:
    out: list[str] = []
    by_key = {
        json.dumps(_item_key(i, keys), sort_keys=True): i for i in live if isinstance(i, dict)
    }
    wanted: set[str] = set()
    for want in desired:
        key = _item_key(want, keys)
        text = json.dumps(key, sort_keys=True)
        wanted.add(text)
        where = f"{path}[{','.join(f'{k}={v}' for k, v in key.items())}]"
        if text not in by_key:
            out.append(where)
            continue
        out.extend(differences(want, by_key[text], where, _owned_item(owned, key)))
    for text, item in by_key.items():
        if text in wanted:
            continue
        key = _item_key(item, keys)
        if owned is None or _owned_item(owned, key) is not None:  # ours, or no way to tell
            out.append(f"{path}[{','.join(f'{k}={v}' for k, v in key.items())}]")
    return out


def differences(
    desired: Any, live: Any, path: str = "", owned: dict[str, Any] | None = None
) -> list[str]:
    """Paths where ``live`` no longer carries what ``desired`` says (empty: in sync).

    ``owned`` is our field manager's ``fieldsV1`` for ``live`` (see :func:`managed_by`); None
    means unknown, and then every extra list-map item counts as drift."""
    if desired in ({}, []) and live is None:
        return []  # the API server omits empty lists and maps
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return [path or "."]
        out: list[str] = []
        for key, value in desired.items():
            where = f"{path}.{key}"
            if isinstance(value, list) and isinstance(live.get(key), list):
                keys = _list_keys(key, value or live[key])  # an empty list: key by the live
                if keys is not None:
                    out.extend(
                        _list_map_differences(value, live[key], keys, where, _child(owned, key))
                    )
                    continue
            out.extend(differences(value, live.get(key), where, _child(owned, key)))
        return out
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return [path]
        out = []
        for i, (want, have) in enumerate(zip(desired, live, strict=True)):
            out.extend(differences(want, have, f"{path}[{i}]"))
        return out
    return [] if _same_scalar(desired, live) else [path]
