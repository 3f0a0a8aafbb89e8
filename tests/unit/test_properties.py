"""Invariants over random valid inputs (hypothesis)."""

import math
import os
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.helpers import spec
from tokenscale.api.model import Architecture
from tokenscale.catalog import GPU_CATALOG
from tokenscale.planning import plan_service
from tokenscale.planning.inputs import resolve_model, tp_problem
from tokenscale.planning.memory import kv_geometry
from tokenscale.planning.result import Plan

SMALL_MODELS = ["llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.1", "llama-2-7b", "llama-3.2-1b"]
EXAMPLES = int(os.environ.get("TOKENSCALE_HYPOTHESIS_EXAMPLES", "60"))
FAST = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def workloads(draw: st.DrawFn) -> dict[str, Any]:
    in_mean = draw(st.floats(50, 6000))
    out_mean = draw(st.floats(10, 1500))
    return {
        "rps": {"mean": draw(st.floats(0, 200))},
        "inputTokens": {"mean": in_mean, "p99": in_mean * draw(st.floats(1, 3))},
        "outputTokens": {"mean": out_mean, "p99": out_mean * draw(st.floats(1, 3))},
        "maxContextTokens": 32768,
        "prefixCacheHitRate": draw(st.floats(0, 0.9)),
    }


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    key = draw(st.sampled_from(SMALL_MODELS))
    return {
        "model": {"name": key, "catalog": key},
        "hardware": {
            "gpu": draw(st.sampled_from(sorted(GPU_CATALOG))),
            "tensorParallelSize": draw(st.sampled_from(["auto", 1, 2, 4])),
        },
        "workload": draw(workloads()),
        "slo": {
            "ttftP99Seconds": draw(st.floats(0.05, 20)),
            "tpotP99Seconds": draw(st.floats(0.005, 0.5)),
        },
        "scaling": {
            "minReplicas": 0,
            "maxReplicas": 10_000,
            "activation": {"query": "sum(pending_requests)"},
        },
    }


def _plan(patch: dict[str, Any]) -> Plan | None:
    s = spec(**patch)
    tp = s.hardware.tensor_parallel_size
    if isinstance(tp, int) and tp_problem(resolve_model(s).architecture, tp):
        return None
    return plan_service(s)


def _only_shortfall(p: Plan) -> bool:
    return all(r.startswith("spec.scaling.maxReplicas=") for r in p.infeasible_reasons)


def _need(p: Plan) -> float:
    """Replicas needed; a plan that cannot serve needs infinitely many."""
    return math.inf if p.replicas is None else p.replicas.needed


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


@FAST
@given(specs())
def test_no_nan_or_inf_for_any_valid_input(patch: dict[str, Any]) -> None:
    p = _plan(patch)
    if p is not None:
        assert _finite(p.model_dump(mode="json"))
        # a count exactly when the configuration can serve (a bound shortfall keeps its count)
        assert (p.replicas is None) == (not p.feasible and not _only_shortfall(p))
        assert p.replica_count >= 0


@FAST
@given(specs(), st.floats(1.0, 10.0))
def test_more_rps_never_fewer_replicas(patch: dict[str, Any], factor: float) -> None:
    base = _plan(patch)
    assume(base is not None and base.feasible)
    assert base is not None
    more = dict(
        patch,
        workload=dict(patch["workload"], rps={"mean": patch["workload"]["rps"]["mean"] * factor}),
    )
    bigger = _plan(more)
    assert bigger is not None
    if bigger.replicas is None or base.replicas is None:
        assert bigger.replicas is None  # more traffic never makes an unservable plan servable
        return
    if bigger.tensor_parallel_size == base.tensor_parallel_size:
        assert bigger.replicas.total >= base.replicas.total
        assert bigger.replicas.needed >= base.replicas.needed - 1e-9
    else:  # auto TP may switch sizes; compare GPUs, the resource actually bought
        assert (bigger.gpus_total or 0) >= (base.gpus_total or 0)


@FAST
@given(specs(), st.floats(1.0, 4.0))
def test_longer_prompts_never_fewer_replicas(patch: dict[str, Any], factor: float) -> None:
    patch = dict(patch, hardware=dict(patch["hardware"], tensorParallelSize=1))
    base = _plan(patch)
    assume(base is not None and base.feasible)
    assert base is not None
    w = patch["workload"]
    longer_in = {"mean": w["inputTokens"]["mean"] * factor, "p99": w["inputTokens"]["p99"] * factor}
    longer = _plan(dict(patch, workload=dict(w, inputTokens=longer_in)))
    assert longer is not None
    assert _need(longer) >= _need(base) * (1 - 1e-9)
    assert longer.replica_count >= base.replica_count or not longer.feasible


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 7), st.integers(1, 7), st.sampled_from([1, 2, 4, 8]))
def test_more_kv_heads_never_less_kv(groups_a: int, groups_b: int, tp: int) -> None:
    lo, hi = sorted((groups_a, groups_b))
    heads = 64

    def arch(kv: int) -> Architecture:
        return Architecture(
            layers=8, hidden_size=4096, attention_heads=heads, kv_heads=kv, params=1e9
        )

    small, big = arch(2 ** (lo - 1)), arch(2 ** (hi - 1))
    assert kv_geometry(big, 2, tp).bytes_per_token >= kv_geometry(small, 2, tp).bytes_per_token
    assert (
        kv_geometry(big, 2, tp).bytes_per_token_per_rank
        >= kv_geometry(small, 2, tp).bytes_per_token_per_rank
    )


@FAST
@given(specs(), st.floats(1.0, 3.0), st.integers(0, 3))
def test_redundancy_never_lowers_the_total(
    patch: dict[str, Any], factor: float, spares: int
) -> None:
    patch = dict(patch, hardware=dict(patch["hardware"], tensorParallelSize=1))
    base = _plan(patch)
    assume(base is not None)
    assert base is not None
    red = _plan(
        dict(
            patch,
            scaling=dict(patch["scaling"], redundancy={"factor": factor, "spareReplicas": spares}),
        )
    )
    assert red is not None
    if base.replicas is None or red.replicas is None:  # redundancy never changes what can serve
        assert base.replicas is None
        assert red.replicas is None
        return
    assert red.replicas.total >= base.replicas.total
    assert red.replicas.with_redundancy >= math.ceil(base.replicas.needed - 1e-9) + spares


@st.composite
def tight_pools(draw: st.DrawFn) -> dict[str, Any]:
    """Weights that nearly fill the GPU (70B at TP 2 on H100, 8B on a 24 GB GPU): a KV pool of
    a few requests, where the knee or the SLOs alone would allow many more."""
    key, gpu, tp = draw(
        st.sampled_from(
            [
                ("llama-3.1-70b", "H100-SXM-80GB", 2),
                ("llama-3.1-8b", "L4-24GB", 1),
                ("llama-3.1-8b", "A10-24GB", 1),
            ]
        )
    )
    in_mean = draw(st.floats(200, 3000))
    out_mean = draw(st.floats(50, 1000))
    return {
        "model": {"name": key, "catalog": key},
        "hardware": {"gpu": gpu, "tensorParallelSize": tp},
        "workload": {
            "rps": {"mean": draw(st.floats(0.1, 50))},
            "inputTokens": {"mean": in_mean, "p99": in_mean * draw(st.floats(1, 2))},
            "outputTokens": {"mean": out_mean, "p99": out_mean * draw(st.floats(1, 2))},
            "maxContextTokens": 8192,
        },
        "slo": {"ttftP99Seconds": draw(st.floats(1, 20)), "tpotP99Seconds": 0.2},
        "scaling": {"minReplicas": 1, "maxReplicas": 10_000},
    }


@FAST
@given(st.one_of(specs(), tight_pools()))
def test_the_operating_batch_fits_the_kv_pool(patch: dict[str, Any]) -> None:
    """The batch that sets capacity and cost is one the KV pool holds at the workload's mix,
    wherever the pool holds at least one mean request; when the pool sets it, throughput needs
    exactly the replicas the KV constraint does."""
    p = _plan(patch)
    assume(p is not None and p.replicas is not None)
    assert p is not None
    assert p.replicas is not None
    if p.concurrency_limits.kv_mean_context >= 1:
        assert p.operating_batch <= p.concurrency_limits.kv_mean_context * (1 + 1e-9)
    if p.assumptions["operating_point_limited_by"] == "KV pool":
        assert math.isclose(p.replicas.throughput, p.replicas.kv, rel_tol=1e-9)
