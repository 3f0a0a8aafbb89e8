"""``vllm:lora_requests_info`` read per service: each engine's newest series (the gauge's value
is the time its labels were set), its running and waiting adapters and ``max_lora``.

An engine is *slot-bound* when adapters wait while all ``max_lora`` slots of its batch are in
use: its queue waits for an adapter slot (vLLM's scheduler skips a request whose adapter has no
slot), which more compute alone does not clear as it clears a queue of one adapter's requests.
"""

from collections.abc import Callable
from dataclasses import dataclass

from tokenscale.catalog import vllm_metrics as v
from tokenscale.metrics.answers import Sample
from tokenscale.metrics.bounds import sample_value
from tokenscale.metrics.promql import QueryConfig

#: Namespace, service and role of a series (``metrics/prometheus.py``'s group key).
GroupKey = tuple[str, str, str]
KeyOf = Callable[[dict[str, str], QueryConfig], GroupKey | None]


@dataclass(frozen=True)
class LoraReading:
    """One service's engines, summed."""

    engines: int
    waiting_adapters: int
    running_adapters: int
    slot_bound_engines: int


def _names(text: str | None) -> list[str]:
    return [n for n in (text or "").split(",") if n.strip()]


def engine_state(labels: dict[str, str]) -> tuple[int, int, bool]:
    """(running adapters, adapters waiting that none of the running requests uses, slot-bound)
    of one engine's series."""
    running, waiting = _names(labels.get(v.LORA_RUNNING)), _names(labels.get(v.LORA_WAITING))
    try:
        slots = int(labels.get(v.LORA_MAX, ""))
    except ValueError:
        slots = 0
    # an adapter waiting and running at once waits for compute, not for a slot
    for_a_slot = set(waiting) - set(running)
    bound = bool(for_a_slot) and slots > 0 and len(running) >= slots
    return len(running), len(for_a_slot), bound


def lora_readings(
    series: list[Sample], cfg: QueryConfig, key_of: KeyOf
) -> dict[GroupKey, LoraReading]:
    """Each group's engines from their newest series (largest gauge value per instance)."""
    newest: dict[tuple[GroupKey, str], tuple[float, dict[str, str]]] = {}
    for s in series:
        key = key_of(s.labels, cfg)
        value, _ = sample_value(s.value)
        if key is None or value is None:
            continue
        where = (key, s.labels.get(cfg.instance_label, ""))
        if where not in newest or value > newest[where][0]:
            newest[where] = (value, s.labels)
    out: dict[GroupKey, LoraReading] = {}
    for (key, _), (_, labels) in newest.items():
        running, waiting, bound = engine_state(labels)
        old = out.get(key, LoraReading(0, 0, 0, 0))
        out[key] = LoraReading(
            engines=old.engines + 1,
            waiting_adapters=old.waiting_adapters + waiting,
            running_adapters=old.running_adapters + running,
            slot_bound_engines=old.slot_bound_engines + int(bound),
        )
    return out
