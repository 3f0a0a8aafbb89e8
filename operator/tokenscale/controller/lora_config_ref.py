"""Inline each adapter's ``adapter_config.json`` a ``spec.lora.adapters[i].adapterConfigRef``
names (a ConfigMap key in the InferenceService's namespace), so the planner sees its rank and
target modules as ``adapterConfig``; as ``model_config_ref.py`` does for the model. Nothing is
written."""

import json
from typing import Any

from tokenscale.api.errors import SpecError, SpecIssue
from tokenscale.api.inference_service import InferenceService
from tokenscale.controller.api import ConfigMapReader


def _read(kube: ConfigMapReader, namespace: str, name: str, key: str) -> dict[str, Any] | str:
    """The JSON object at ``key`` of ConfigMap ``name``, or why not (with the fix)."""
    cm = kube.read_config_map(namespace, name)
    if cm is None:
        return (
            "no such ConfigMap; create it from the adapter's adapter_config.json (kubectl "
            f"create configmap {name} --from-file={key}=adapter_config.json)"
        )
    text = (cm.get("data") or {}).get(key)
    if text is None:
        return f"the ConfigMap has no key {key!r}"
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"not JSON: {exc}"
    if not isinstance(config, dict):
        return f"holds a {type(config).__name__}, not a JSON object"
    return config


def with_adapter_configs(
    kube: ConfigMapReader, namespace: str, service: InferenceService
) -> InferenceService:
    """``service`` with every ``adapterConfigRef`` read into ``adapterConfig``; unchanged
    without one. Every unreadable ref is a :class:`SpecError` issue naming its adapter."""
    lora = service.spec.lora
    if lora is None or all(a.adapter_config_ref is None for a in lora.adapters):
        return service
    issues: list[SpecIssue] = []
    adapters = []
    for i, a in enumerate(lora.adapters):
        ref = a.adapter_config_ref
        if ref is None:
            adapters.append(a)
            continue
        got = _read(kube, namespace, ref.config_map_name, ref.key)
        if isinstance(got, str):
            where = (
                f"spec.lora.adapters[{i}].adapterConfigRef (ConfigMap "
                f"{namespace}/{ref.config_map_name}, key {ref.key})"
            )
            issues.append(SpecIssue(where, got))
            continue
        adapters.append(a.model_copy(update={"adapter_config": got, "adapter_config_ref": None}))
    if issues:
        raise SpecError(issues)
    spec = service.spec.model_copy(update={"lora": lora.model_copy(update={"adapters": adapters})})
    return service.model_copy(update={"spec": spec})
