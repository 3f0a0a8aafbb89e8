"""PURE: a catalog entry applied to a model it does not name.

``model.catalog: mistral-7b-v0.1`` with ``model.name: mistralai/Mistral-7B-Instruct-v0.3``
plans v0.1's shapes (a 4,096-token sliding window v0.3 does not have) for the v0.3 server: a
warning names the entry, the name, and — when another entry answers to that name — every shape
that differs and what it does to the KV of a P99 request.
"""

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.model import Architecture
from tokenscale.catalog.models import MODEL_CATALOG, find_model
from tokenscale.planning.memory import kv_geometry

#: The shapes compared, as the YAML names them.
_SHAPES = (
    "layers",
    "hidden_size",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_context_tokens",
    "sliding_window",
    "experts",
)


def _yaml(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _value(arch: Architecture, field: str) -> object:
    value = getattr(arch, field, None)
    if field == "kv_heads":
        return arch.effective_kv_heads
    if field == "head_dim":
        return arch.effective_head_dim
    return value


def _shown(value: object) -> str:
    if value is None:
        return "none"
    return f"{value:,}" if isinstance(value, int) else str(value)


def name_mismatch_warning(spec: InferenceServiceSpec) -> str | None:
    """The warning for ``model.catalog`` naming an entry whose HF ids do not include
    ``model.name``, or None."""
    m = spec.model
    if m.catalog is None or m.catalog not in MODEL_CATALOG:
        return None
    entry = MODEL_CATALOG[m.catalog]
    if m.name.lower() in (entry.key, *(a.lower() for a in entry.aliases)):
        return None
    text = (
        f"spec.model.name {m.name!r} is not one of catalog {entry.key}'s Hugging Face ids "
        f"({', '.join(entry.aliases)}): {entry.key}'s shapes are planned"
    )
    other = find_model(m.name)
    if other is None or other.key == entry.key:
        return text + "; check that they are the served model's (or give hfConfig)"
    mine, theirs = entry.architecture, other.architecture
    diffs = [
        f"{_yaml(f)} {_shown(_value(mine, f))} vs {_shown(_value(theirs, f))}"
        for f in _SHAPES
        if _value(mine, f) != _value(theirs, f)
    ]
    w = spec.workload
    context = w.input_tokens.p99_or_mean + w.output_tokens.p99_or_mean
    kv_mine = kv_geometry(mine, 2.0, 1).bytes_for_context(context)
    kv_theirs = kv_geometry(theirs, 2.0, 1).bytes_for_context(context)
    change = kv_mine / kv_theirs - 1 if kv_theirs else 0.0
    text += f", but {m.name!r} is catalog {other.key}"
    if diffs:
        text += f" ({entry.key} vs {other.key}: {'; '.join(diffs)})"
    if abs(change) >= 0.005:
        text += f"; KV per P99 request {change:+.0%} against {other.key}'s"
    return text + f" — use catalog: {other.key}"
