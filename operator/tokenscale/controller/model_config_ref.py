"""Inline the Hugging Face ``config.json`` a ``spec.model.hfConfigRef`` names (a ConfigMap key in
the InferenceService's namespace), so the planner sees ``hfConfig``. The same ConfigMap ``get``
the profile uses; nothing is written."""

import json

from tokenscale.api.errors import SpecError
from tokenscale.api.inference_service import InferenceService
from tokenscale.controller.api import ConfigMapReader


def with_hf_config(
    kube: ConfigMapReader, namespace: str, service: InferenceService
) -> InferenceService:
    """``service`` with ``model.hfConfig`` read from the ConfigMap ``model.hfConfigRef`` names;
    unchanged without a ref. A missing ConfigMap or key, or content that is not a JSON object,
    is a :class:`SpecError` naming the ref and the fix."""
    model = service.spec.model
    ref = model.hf_config_ref
    if ref is None:
        return service
    where = f"spec.model.hfConfigRef (ConfigMap {namespace}/{ref.config_map_name}, key {ref.key})"
    cm = kube.read_config_map(namespace, ref.config_map_name)
    if cm is None:
        raise SpecError.single(
            where,
            "no such ConfigMap; create it from the model's config.json (kubectl create "
            f"configmap {ref.config_map_name} --from-file={ref.key}=config.json)",
        )
    text = (cm.get("data") or {}).get(ref.key)
    if text is None:
        raise SpecError.single(where, f"the ConfigMap has no key {ref.key!r}")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError.single(where, f"not JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise SpecError.single(where, f"holds a {type(config).__name__}, not a JSON object")
    inlined = model.model_copy(update={"hf_config": config, "hf_config_ref": None})
    spec = service.spec.model_copy(update={"model": inlined})
    return service.model_copy(update={"spec": spec})
