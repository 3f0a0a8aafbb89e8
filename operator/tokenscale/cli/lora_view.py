"""The LoRA rows of the wide plan view: what the adapters cost and the maxLoras compared."""

from tokenscale.planning.formulas import GIB
from tokenscale.planning.result import LoraEstimate


def _mib(x: float) -> str:
    return f"{x / 2**20:,.1f} MiB"


def compared_text(e: LoraEstimate) -> str:
    """``maxLoras 1: infeasible · 8: 10 GPUs, 4.84 RPS, 3.2 swaps/s · …``"""
    cells = []
    for c in e.compared:
        gpus = "infeasible" if c.gpus is None else f"{c.gpus} GPUs"
        cells.append(
            f"{c.max_loras}: {gpus}, {c.rps_per_replica:,.2f} RPS, "
            f"{c.swaps_per_s_per_replica:.2g} swaps/s"
        )
    return "maxLoras " + " · ".join(cells)


def lora_rows(e: LoraEstimate) -> list[tuple[str, str]]:
    """(label, text) rows for the wide view's model table."""
    return [
        ("LoRA", e.summary),
        ("LoRA maxLoras", f"{e.max_loras} ({e.max_loras_reason})"),
        (
            "LoRA memory",
            f"slots {e.slots_bytes_per_gpu / GIB:,.2f} GiB per GPU (KV pool "
            f"{e.kv_pool_without_bytes / GIB:,.2f} GiB without LoRA); mean adapter "
            f"{_mib(e.mean_adapter_bytes)}; host cache (maxCpuLoras {e.max_cpu_loras}) up to "
            f"{e.host_cache_bytes / GIB:,.2f} GiB",
        ),
        (
            "LoRA swaps",
            f"{e.gpu_miss_fraction:.1%} of requests load their adapter "
            f"({e.load_seconds_host * 1e3:,.1f} ms from host memory, "
            f"{e.load_seconds_source * 1e3:,.0f} ms from the source for the "
            f"{e.host_miss_fraction:.1%} not cached); {e.distinct_at_batch:,.1f} distinct "
            "adapters in the operating batch",
        ),
        ("LoRA compared", compared_text(e)),
    ]
