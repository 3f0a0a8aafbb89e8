"""The simulated engine with LoRA: a batch never spans more than maxLoras adapters, an adapter
not on the GPU is loaded (host memory or its source) before its step, and the many-adapter
shape draws its adapters by their Zipf shares."""

from collections import Counter

import pytest

from tests.helpers import spec
from tokenscale.planning import plan_service
from tokenscale.simulation.capacity import run_one_replica
from tokenscale.simulation.recorder import Recorder
from tokenscale.simulation.replica import Replica, SimRequest, replica_config
from tokenscale.simulation.workloads import many_adapters


def _config(adapters: int, max_loras: int, max_cpu_loras: int | None = None):  # type: ignore[no-untyped-def]
    lora: dict[str, object] = {
        "adapters": [{"name": f"t{i}", "source": f"/a/t{i}", "rank": 16} for i in range(adapters)],
        "maxLoras": max_loras,
    }
    if max_cpu_loras is not None:
        lora["maxCpuLoras"] = max_cpu_loras
    s = spec(lora=lora)
    return replica_config(s, plan_service(s, "svc"), 512)


class _Watched(Replica):
    """A replica that remembers the most adapters any step's batch held."""

    widest = 0

    def _lora_step(self, decode, chunks):  # type: ignore[no-untyped-def]
        used = {r.adapter for r in decode} | {r.adapter for r, _ in chunks}
        self.widest = max(self.widest, len(used))
        return super()._lora_step(decode, chunks)


@pytest.mark.parametrize("max_loras", [1, 2, 4])
def test_a_batch_never_spans_more_adapters_than_max_loras(max_loras: int) -> None:
    cfg = _config(6, max_loras)
    assert cfg.lora is not None
    assert cfg.lora.max_loras == max_loras
    replica = _Watched(cfg, Recorder(), 0.0)
    for k in range(60):  # all at once: the scheduler has every adapter to choose from
        replica.add(SimRequest(0.0, 200, 50, adapter=k % 6), 0.0)
    replica.run_until(float("inf"))
    assert replica.rec.success == 60
    assert replica.widest == max_loras


def test_loads_come_from_the_source_once_then_from_host_memory() -> None:
    """Two slots, three adapters taking turns: every switch loads; the first load of each is
    from its source, later ones from host memory (maxCpuLoras holds all three)."""
    cfg = _config(3, 2)
    rec = Recorder()
    replica = Replica(cfg, rec, 0.0)
    t = 0.0
    for k in range(30):
        replica.add(SimRequest(t, 100, 4, adapter=k % 3), t)
        replica.run_until(t + 1.0)
        t += 1.0
    replica.run_until(float("inf"))
    assert rec.lora_source_loads == 3
    assert rec.lora_host_loads == 27


def test_a_host_cache_smaller_than_the_adapters_reads_the_source_again() -> None:
    cfg = _config(3, 1, max_cpu_loras=1)
    rec = Recorder()
    replica = Replica(cfg, rec, 0.0)
    t = 0.0
    for k in range(9):
        replica.add(SimRequest(t, 100, 4, adapter=k % 3), t)
        replica.run_until(t + 1.0)
        t += 1.0
    replica.run_until(float("inf"))
    assert (rec.lora_source_loads, rec.lora_host_loads) == (9, 0)


def test_one_slot_for_many_adapters_is_slower_than_a_slot_each() -> None:
    """The same arrivals: one slot serialises the adapters, a slot each batches them."""
    pairs = [(500, 100)] * 50
    adapters = [k % 10 for k in range(50)]
    e2e = {}
    for m in (1, 10):
        rec = run_one_replica(_config(10, m), 20.0, pairs, 400, seed=1, adapters=adapters)
        e2e[m] = sum(o.e2e_s for o in rec.outcomes) / len(rec.outcomes)
    assert e2e[1] > 2 * e2e[10]


def test_the_many_adapter_shape_follows_its_zipf_shares() -> None:
    trace = many_adapters(600.0, 20.0, 100, exponent=1.0, seed=3)
    counts = Counter(r.adapter for r in trace.requests)
    n = len(trace.requests)
    top = counts[0] / n
    assert top == pytest.approx(1.0 / sum(1.0 / k for k in range(1, 101)), abs=0.03)
    assert counts[0] > counts[9] > 0
    assert len(counts) > 60  # the long tail is there
