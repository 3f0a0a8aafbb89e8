"""``spec.lora``: LoRA adapters served from the base model's engines (vLLM ``--enable-lora``).

Each adapter is a name requests address (the OpenAI ``model`` field), a source vLLM loads
(``--lora-modules NAME=SOURCE``: a Hugging Face id or a path in the pod) and its shape (rank and
target modules), given inline or read from the adapter's ``adapter_config.json`` (inline, a file
the command line reads, or a ConfigMap the operator reads). The traffic each adapter takes is a
share per adapter or a Zipf exponent over the list's order; ``maxLoras`` is how many adapters a
GPU holds in one batch (absent: the planner recommends one), ``maxCpuLoras`` how many host
memory caches.
"""

import math
from typing import Any, Literal, Self

from pydantic import Field, model_validator

from tokenscale.api.base import ApiModel
from tokenscale.api.k8s_names import ObjectName

#: The values vLLM's ``--max-lora-rank`` accepts (``vllm/config/lora.py``, ``MaxLoRARanks``).
MAX_LORA_RANKS: tuple[int, ...] = (1, 8, 16, 32, 64, 128, 256, 320, 512)
#: How far the shares' sum may be from 1 (rounding in a hand-written manifest).
SHARE_TOLERANCE = 1e-3
#: Most adapters one spec may list.
MAX_ADAPTERS = 10_000

MaxLoraRank = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]


class AdapterConfigRef(ApiModel):
    """An adapter's ``adapter_config.json`` kept in a ConfigMap of the InferenceService's
    namespace (the operator reads it, as it reads ``spec.model.hfConfigRef``)."""

    config_map_name: ObjectName = Field(description="ConfigMap holding the adapter_config.json.")
    key: str = Field(
        default="adapter_config.json",
        pattern=r"^[-._a-zA-Z0-9]+$",
        max_length=253,
        description="Key of the adapter_config.json content (JSON).",
    )


class AdapterVolume(ApiModel):
    """A PersistentVolumeClaim holding adapter folders (adapter_config.json and
    adapter_model.safetensors each), mounted read-only into every vLLM container."""

    claim_name: ObjectName = Field(description="The PersistentVolumeClaim's name.")
    mount_path: str = Field(
        default="/adapters",
        pattern=r"^/[-._a-zA-Z0-9/]*$",
        max_length=1024,
        description="Where the claim is mounted; adapters' sources name folders under it.",
    )


class LoraAdapter(ApiModel):
    """One LoRA adapter: what requests call it, where vLLM loads it from, its shape."""

    name: str = Field(
        min_length=1,
        max_length=253,
        pattern=r"^[A-Za-z0-9][-._A-Za-z0-9/]*$",
        description="The name requests address (the OpenAI `model` field); --lora-modules NAME.",
    )
    source: str = Field(
        min_length=1,
        max_length=4096,
        pattern=r"^[^\s=]+$",
        description="Where vLLM loads it from: a Hugging Face id or a path in the pod "
        "(--lora-modules NAME=SOURCE), e.g. under spec.lora.adapterVolume's mountPath.",
    )
    rank: int | None = Field(
        default=None,
        ge=1,
        le=512,
        description="LoRA rank r; absent: read from the adapter's adapter_config.json.",
    )
    target_modules: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Modules the adapter changes (q_proj, k_proj, v_proj, o_proj, gate_proj, "
        "up_proj, down_proj); absent: from adapter_config.json, else all seven.",
    )
    adapter_config: dict[str, Any] | None = Field(
        default=None, description="The adapter's adapter_config.json content, inline."
    )
    adapter_config_file: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="Path to the adapter's adapter_config.json, read by the CLI (relative to "
        "the manifest's directory); the operator reads no path: use adapterConfigRef.",
    )
    adapter_config_ref: AdapterConfigRef | None = Field(
        default=None,
        description="The adapter's adapter_config.json in a ConfigMap of this namespace, read by "
        "the operator (a ConfigMap get).",
    )
    share: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        description="Share of the service's requests that address this adapter (all adapters' "
        "shares sum to 1); absent on every adapter: spec.lora.zipfExponent decides.",
    )

    @model_validator(mode="after")
    def _one_config(self) -> Self:
        given = [
            k
            for k, v in (
                ("adapterConfig", self.adapter_config),
                ("adapterConfigFile", self.adapter_config_file),
                ("adapterConfigRef", self.adapter_config_ref),
            )
            if v is not None
        ]
        if len(given) > 1:
            raise ValueError(
                f"adapter {self.name!r}: give one of adapterConfig, adapterConfigFile or "
                f"adapterConfigRef (got {', '.join(given)})"
            )
        return self

    @property
    def config_rank(self) -> int | None:
        """``r`` of the inline (or inlined) adapter_config.json, when it is a positive int."""
        r = (self.adapter_config or {}).get("r")
        return r if isinstance(r, int) and not isinstance(r, bool) and r > 0 else None

    @property
    def effective_rank(self) -> int | None:
        """The rank: given, else the adapter_config.json's ``r``; None while unknown."""
        return self.rank if self.rank is not None else self.config_rank

    @property
    def effective_target_modules(self) -> list[str] | None:
        """The target modules: given, else the adapter_config.json's list; None: unknown."""
        if self.target_modules is not None:
            return self.target_modules
        modules = (self.adapter_config or {}).get("target_modules")
        if isinstance(modules, list) and all(isinstance(m, str) for m in modules) and modules:
            return list(modules)
        if isinstance(modules, str) and modules:  # PEFT also writes one module as a string
            return [modules]
        return None

    @property
    def base_model(self) -> str | None:
        """``base_model_name_or_path`` of the adapter_config.json, when given."""
        base = (self.adapter_config or {}).get("base_model_name_or_path")
        return base if isinstance(base, str) and base else None


class Lora(ApiModel):
    """LoRA adapters on the served model; absent = LoRA off."""

    adapters: list[LoraAdapter] = Field(
        min_length=1, max_length=MAX_ADAPTERS, description="The adapters served."
    )
    zipf_exponent: float | None = Field(
        default=None,
        ge=0.0,
        le=10.0,
        description="Traffic over the adapters in list order: the k-th takes a share "
        "proportional to 1/k^s (0: all equal). Absent with no shares: 1.0. Not with shares.",
    )
    max_loras: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ADAPTERS,
        description="--max-loras: adapters a GPU holds in one batch (each a slot of "
        "maxLoraRank reserved for every LoRA-capable module); absent: the planner recommends one.",
    )
    max_lora_rank: MaxLoraRank | None = Field(
        default=None,
        description="--max-lora-rank: the largest rank a slot holds (vLLM's choices 1, 8, 16, "
        "32, 64, 128, 256, 320, 512); absent: the smallest choice that holds every adapter.",
    )
    max_cpu_loras: int | None = Field(
        default=None,
        ge=1,
        le=MAX_ADAPTERS,
        description="--max-cpu-loras: adapters cached in host memory (at least maxLoras); "
        "a load from beyond it reads the source again. Absent: every adapter (vLLM's default is "
        "maxLoras).",
    )

    adapter_volume: AdapterVolume | None = Field(
        default=None,
        description="A volume of adapter folders mounted into the engines (read-only); absent: "
        "vLLM downloads Hugging Face ids itself.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        problems: list[str] = []
        seen: dict[str, int] = {}
        for i, a in enumerate(self.adapters):
            if a.name in seen:
                problems.append(
                    f"adapters[{i}].name {a.name!r} repeats adapters[{seen[a.name]}].name "
                    "(requests address an adapter by its name); rename one"
                )
            seen.setdefault(a.name, i)
            rank = a.effective_rank
            if rank is not None and self.max_lora_rank is not None and rank > self.max_lora_rank:
                problems.append(
                    f"adapters[{i}].rank={rank} exceeds maxLoraRank={self.max_lora_rank}: vLLM "
                    f"refuses to load it; raise maxLoraRank to {rank_choice(rank)} or remove it"
                )
        shares = [a.share for a in self.adapters]
        given = [s for s in shares if s is not None]
        if given and len(given) != len(shares):
            missing = [f"adapters[{i}].share" for i, s in enumerate(shares) if s is None]
            problems.append(
                f"{', '.join(missing[:3])}{' …' if len(missing) > 3 else ''} missing: give every "
                "adapter a share, or none (spec.lora.zipfExponent then decides)"
            )
        elif given and not math.isclose(sum(given), 1.0, abs_tol=SHARE_TOLERANCE):
            problems.append(
                f"adapters[*].share sum to {sum(given):.4g}, not 1: each is a share of all the "
                "service's requests; scale them so they sum to 1"
            )
        if given and self.zipf_exponent is not None:
            problems.append("give adapters[*].share or zipfExponent, not both")
        if (
            self.max_loras is not None
            and self.max_cpu_loras is not None
            and self.max_cpu_loras < self.max_loras
        ):
            problems.append(
                f"maxCpuLoras={self.max_cpu_loras} is below maxLoras={self.max_loras}: vLLM "
                "refuses to start; raise maxCpuLoras or lower maxLoras"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def shares(self) -> list[float]:
        """Each adapter's share of the requests, in list order (summing to 1)."""
        given = [a.share for a in self.adapters]
        if all(s is not None for s in given):
            total = sum(s for s in given if s is not None)
            return [float(s) / total for s in given if s is not None]
        return zipf_shares(len(self.adapters), self.exponent)

    @property
    def exponent(self) -> float:
        """The Zipf exponent in force (1.0 when neither shares nor an exponent is given)."""
        return 1.0 if self.zipf_exponent is None else self.zipf_exponent


def zipf_shares(count: int, exponent: float) -> list[float]:
    """``p_k = k^-s / Σ_j j^-s`` for ``k = 1 … count``."""
    weights = [1.0 / (k**exponent) for k in range(1, count + 1)]
    total = sum(weights)
    return [w / total for w in weights]


def rank_choice(rank: int) -> int:
    """The smallest ``--max-lora-rank`` choice at least ``rank`` (vLLM's largest: 512)."""
    return next((c for c in MAX_LORA_RANKS if c >= rank), MAX_LORA_RANKS[-1])
