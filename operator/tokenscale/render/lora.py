"""``spec.lora`` rendered for vLLM: the LoRA flags, one ``--lora-modules NAME=SOURCE`` per
adapter (vLLM's ``LoRAParserAction``: ``name=path`` items after one flag), and the adapters'
volume. The flags are part of the pod template, so a changed adapter list changes the config
hash and rolls the workload once."""

from typing import Any

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning.result import Plan

#: The volume name the adapters' claim is mounted under.
ADAPTER_VOLUME = "lora-adapters"


def lora_args(spec: InferenceServiceSpec, plan: Plan) -> list[str]:
    """``--enable-lora --max-loras M --max-lora-rank R --max-cpu-loras C --lora-modules …``
    at the plan's ``maxLoras`` (empty without ``spec.lora``)."""
    lora, est = spec.lora, plan.lora
    if lora is None or est is None:
        return []
    return [
        "--enable-lora",
        "--max-loras",
        str(est.max_loras),
        "--max-lora-rank",
        str(est.max_lora_rank),
        "--max-cpu-loras",
        str(est.max_cpu_loras),
        "--lora-modules",
        *(f"{a.name}={a.source}" for a in lora.adapters),
    ]


def lora_volume(spec: InferenceServiceSpec) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(volume, mount) for ``spec.lora.adapterVolume``, read-only; None without one."""
    if spec.lora is None or spec.lora.adapter_volume is None:
        return None
    v = spec.lora.adapter_volume
    return (
        {
            "name": ADAPTER_VOLUME,
            "persistentVolumeClaim": {"claimName": v.claim_name, "readOnly": True},
        },
        {"name": ADAPTER_VOLUME, "mountPath": v.mount_path, "readOnly": True},
    )
