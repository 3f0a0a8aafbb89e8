"""No estimate below the hardware's floor: every timing the planner gives, over the catalog's
models × GPUs × tensor-parallel layouts, is at least the work it counts over the datasheet's
peak — HBM bytes over bandwidth, FLOPs over the tensor peak, KV bytes over one direction of the
link, a ring all-reduce's bytes over one direction of the link.

The floors are computed here from the datasheet figures themselves (``interconnectGBps`` and
``pcieGBps`` are quoted for both directions together), not from the planner's bandwidths."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import spec
from tokenscale.api.hardware import GpuSpec
from tokenscale.catalog.gpus import GPU_CATALOG
from tokenscale.catalog.models import MODEL_CATALOG
from tokenscale.planning import Calibration, Conditions, PerfModel, perf_at, resolve
from tokenscale.planning.disaggregation import fabric_between, transfer_seconds
from tokenscale.planning.performance import link_bytes_per_s
from tokenscale.planning.physics import datasheet_flops

FLOOR = settings(max_examples=150, deadline=None)
GB = 1e9


def _one_way_link(gpu: GpuSpec) -> float:
    """One direction of the GPU's link, bytes/s: half the bidirectional datasheet figure."""
    return (gpu.interconnect_gbps or gpu.pcie_gbps) * GB / 2.0


def _perf(
    model: str, gpu: str, tp: int, in_tokens: float, out_tokens: float, cal: Calibration
) -> PerfModel:
    s = spec(
        model={"name": model, "catalog": model},
        hardware={"gpu": gpu, "tensorParallelSize": tp},
        workload={
            "rps": {"mean": 1},
            "inputTokens": {"mean": in_tokens, "p99": in_tokens},
            "outputTokens": {"mean": out_tokens, "p99": out_tokens},
            "maxContextTokens": None,
        },
    )
    r = resolve(s, "floor")
    return perf_at(r, Conditions(workload=s.workload, calibration=cal), tp)


models = st.sampled_from(sorted(MODEL_CATALOG))
gpus = st.sampled_from(sorted(GPU_CATALOG))
tps = st.sampled_from([1, 2, 4, 8])
calibrations = st.builds(Calibration, st.floats(0.5, 1.5), st.floats(0.5, 1.5))


@FLOOR
@given(
    models,
    gpus,
    tps,
    st.floats(1, 32_000),
    st.floats(1, 4_000),
    st.floats(1, 512),
    calibrations,
)
def test_decode_step_reads_its_bytes_no_faster_than_hbm(
    model: str,
    gpu: str,
    tp: int,
    in_tokens: float,
    out_tokens: float,
    batch: float,
    cal: Calibration,
) -> None:
    perf = _perf(model, gpu, tp, in_tokens, out_tokens, cal)
    g = perf.geometry
    hbm = GPU_CATALOG[gpu].spec.hbm_bandwidth_gbps * GB
    held = g.tokens_held(perf.decode_context_tokens)
    per_gpu_bytes = perf.weight_read_bytes(batch) / tp + batch * held * g.bytes_per_token_per_rank
    floor = per_gpu_bytes / hbm
    assert perf.step_seconds(batch) >= floor
    seqs = max(1, int(batch))
    mixed = perf.mixed_step_seconds(seqs, seqs * perf.decode_context_tokens, 0.0, seqs)
    seq_floor = (perf.weight_read_bytes(seqs) / tp + seqs * held * g.bytes_per_token_per_rank) / hbm
    assert mixed >= seq_floor * (1 - 1e-12)


@FLOOR
@given(models, gpus, tps, st.floats(1, 64_000), st.floats(0, 32_000), calibrations)
def test_prefill_does_its_flops_no_faster_than_the_tensor_peak(
    model: str, gpu: str, tp: int, tokens: float, cached: float, cal: Calibration
) -> None:
    perf = _perf(model, gpu, tp, tokens + cached, 100, cal)
    dtype = MODEL_CATALOG[model].default_dtype
    peak = datasheet_flops(GPU_CATALOG[gpu].spec, dtype) * tp
    flops = perf.prefill_flops(tokens, cached)
    assert perf.prefill_seconds(tokens, cached) >= flops / peak
    # a prefill chunk riding a decode step: its FLOPs are still done at no more than the peak
    step = perf.mixed_step_seconds(0, 0.0, flops, math.ceil(tokens))
    assert step >= flops / peak


@FLOOR
@given(models, gpus, st.sampled_from([2, 4, 8]), st.floats(1, 64_000), calibrations)
def test_an_all_reduce_is_no_faster_than_its_ring_bound(
    model: str, gpu: str, tp: int, tokens: float, cal: Calibration
) -> None:
    perf = _perf(model, gpu, tp, 1000, 100, cal)
    payload = tokens * perf.arch.hidden_size * 2.0  # BF16 activations
    one_way = _one_way_link(GPU_CATALOG[gpu].spec)
    ring = 2.0 * (tp - 1) / tp * payload / one_way  # each rank sends this much, one way
    assert perf.allreduce_seconds(tokens) >= 2 * perf.arch.layers * ring


@FLOOR
@given(
    models,
    gpus,
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2, 4, 8]),
    st.floats(1, 128_000),
    st.booleans(),
)
def test_a_kv_transfer_is_no_faster_than_one_direction_of_the_link(
    model: str, gpu: str, p_tp: int, d_tp: int, tokens: float, same_node: bool
) -> None:
    g = GPU_CATALOG[gpu].spec
    decode = _perf(model, gpu, d_tp, 1000, 100, Calibration())
    fabric = fabric_between(same_node, link_bytes_per_s(g), g.inter_node_gbps, 1.0, 1.0, 0.0)
    lanes = min(p_tp, d_tp)
    per_token = decode.geometry.bytes_per_token
    held = decode.geometry.tokens_held(tokens)
    # each lane is one GPU's link, one way; across nodes one NIC's line rate (itself one way)
    one_way = _one_way_link(g) if same_node else (g.inter_node_gbps or 12.5) * GB
    assert transfer_seconds(per_token, held, fabric, lanes) >= per_token * held / (lanes * one_way)


def test_the_issue_example_llama_8b_kv_over_h100_nvlink_is_not_below_2_18_ms() -> None:
    """7,500 tokens of Llama-3.1-8B (131,072 B each: 983 MB) over NVLink 4 (450 GB/s one way):
    the floor is 2.18 ms; the planner once said 2.1 ms (900 GB/s taken one way)."""
    h100 = GPU_CATALOG["H100-SXM-80GB"].spec
    perf = _perf("llama-3.1-8b", "H100-SXM-80GB", 1, 7500, 100, Calibration())
    per_token = perf.geometry.bytes_per_token
    assert per_token == 131_072
    assert per_token * 7500 / 450e9 >= 2.18e-3
    fabric = fabric_between(True, link_bytes_per_s(h100), None, 0.70, 0.80, 5e-4)
    assert transfer_seconds(per_token, 7500, fabric, 1) >= 2.18e-3


def test_links_are_the_datasheet_figure_one_way() -> None:
    assert link_bytes_per_s(GPU_CATALOG["H100-SXM-80GB"].spec) == 450e9  # NVLink 4
    assert link_bytes_per_s(GPU_CATALOG["H200-SXM-141GB"].spec) == 450e9
    assert link_bytes_per_s(GPU_CATALOG["A100-SXM-80GB"].spec) == 300e9  # NVLink 3
    assert link_bytes_per_s(GPU_CATALOG["B200-180GB"].spec) == 900e9  # NVLink 5
    assert link_bytes_per_s(GPU_CATALOG["MI300X-192GB"].spec) == 448e9  # 7 × 64 GB/s
    assert link_bytes_per_s(GPU_CATALOG["L40S-48GB"].spec) == 32e9  # PCIe Gen4 x16


def test_every_gpu_cites_its_link_and_the_one_way_figure_used() -> None:
    for key, entry in GPU_CATALOG.items():
        one_way = link_bytes_per_s(entry.spec) / GB
        assert "link:" in entry.source, key
        assert f"{one_way:,.0f} GB/s each way" in entry.source, key
