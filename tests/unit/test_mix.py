"""spec.hardware.variants: validation, the mix integer program and the mix plan."""

import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.helpers import BASE, ROOT, deep_merge
from tokenscale.api import InferenceService
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_manifests
from tokenscale.cli.app import app
from tokenscale.planning import plan_service
from tokenscale.planning.mix_solver import MixOption, mix_capacity, solve_mix
from tokenscale.planning.result import Plan
from tokenscale.render import render_bundle

MIXED = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
runner = CliRunner()


def _doc(patch: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = yaml.safe_load(MIXED.read_text())
    return deep_merge(doc, patch or {})


def _svc(doc: dict[str, Any]) -> InferenceService:
    return parse_manifests(yaml.safe_dump(doc))[0]


def _variants(**over: Any) -> dict[str, Any]:
    hw = {
        "gpu": None,
        "tensorParallelSize": None,
        "variants": [
            {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1, "gpuHourPrice": 3.0},
            {"gpu": "L40S-48GB", "tensorParallelSize": 1, "gpuHourPrice": 1.1},
        ],
    }
    return {"spec": {"hardware": {**hw, **over}}}


# -- validation --------------------------------------------------------------------------------


def test_gpu_and_variants_together_are_refused_naming_the_field() -> None:
    doc = deep_merge(BASE, _variants(gpu="H100-SXM-80GB"))
    with pytest.raises(SpecError) as err:
        _svc(doc)
    assert err.value.paths == ("spec.hardware",)
    assert "exactly one of gpu" in str(err.value)


def test_a_variant_with_both_gpu_forms_names_its_path() -> None:
    doc = deep_merge(BASE, _variants())
    doc["spec"]["hardware"]["variants"][1]["gpuSpec"] = {
        "memoryGiB": 40,
        "hbmBandwidthGBps": 800,
        "bf16Tflops": 300,
    }
    with pytest.raises(SpecError) as err:
        _svc(doc)
    assert err.value.paths == ("spec.hardware.variants[1]",)


def test_duplicate_variant_names_and_bad_fields_are_refused() -> None:
    doc = deep_merge(BASE, _variants())
    doc["spec"]["hardware"]["variants"][1]["gpu"] = "H100-SXM-80GB"
    with pytest.raises(SpecError, match=r"variants\[1\] and variants\[0\] are both named"):
        _svc(doc)
    doc = deep_merge(BASE, _variants())
    doc["spec"]["hardware"]["variants"][0]["maxReplicas"] = -1
    with pytest.raises(SpecError) as err:
        _svc(doc)
    assert err.value.paths == ("spec.hardware.variants[0].maxReplicas",)
    doc = deep_merge(BASE, _variants(tensorParallelSize=2))
    with pytest.raises(SpecError, match=r"variants\[i\]\.tensorParallelSize"):
        _svc(doc)


def test_an_unknown_gpu_in_a_variant_is_reported_at_the_variant() -> None:
    doc = deep_merge(BASE, _variants())
    doc["spec"]["hardware"]["variants"][1]["gpu"] = "Z9000"
    svc = _svc(doc)
    with pytest.raises(SpecError) as err:
        plan_service(svc.spec, "x")
    assert err.value.paths == ("spec.hardware.variants[1].gpu",)


def test_cli_exits_2_naming_the_variant_field(tmp_path: Path) -> None:
    doc = _doc()
    doc["spec"]["hardware"]["variants"][0]["tensorParallelSize"] = 3
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(doc))
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2
    assert "spec.hardware.variants[0].tensorParallelSize" in result.output


# -- the integer program -------------------------------------------------------------------------


def _brute(
    options: list[MixOption], demand: float, routing: str, spare: int, lo: int, hi: int
) -> float | None:
    """Every count vector: the least cost that carries the demand (the test's own oracle)."""
    best: float | None = None
    for counts in itertools.product(*(range(o.max_replicas + 1) for o in options)):
        total = sum(counts)
        if not lo <= total <= hi:
            continue
        used = [o.capacity_rps for o, n in zip(options, counts, strict=True) if n > 0]
        if demand > 0 or spare > 0 or lo > 0:
            if not used:
                continue
            if routing == "round-robin":
                ok = total >= math.ceil(demand / min(used) - 1e-9) + spare
            else:
                carried = sum(o.capacity_rps * n for o, n in zip(options, counts, strict=True))
                # the solver's slack (mix_solver._SLACK_RPS): a demand a millionth of a
                # req/s over a multiple of the capacities is carried
                ok = carried >= demand + spare * max(used) - 1e-6
            if not ok:
                continue
        cost = sum(o.weight * n for o, n in zip(options, counts, strict=True))
        best = cost if best is None else min(best, cost)
    return best


option = st.builds(
    MixOption,
    name=st.just("v"),
    capacity_rps=st.floats(0.5, 30.0),
    weight=st.floats(0.1, 20.0),
    max_replicas=st.integers(0, 6),
    preference=st.integers(-2, 2),
)


@settings(max_examples=150, deadline=None)
@given(
    options=st.lists(option, min_size=1, max_size=3),
    demand=st.floats(0.0, 120.0),
    routing=st.sampled_from(["round-robin", "load-aware"]),
    spare=st.integers(0, 2),
    lo=st.integers(0, 3),
)
def test_the_mix_is_optimal_feasible_and_never_dearer_than_one_variant(
    options: list[MixOption], demand: float, routing: str, spare: int, lo: int
) -> None:
    hi = 12
    sol = solve_mix(options, demand, routing, spare, lo, hi)  # type: ignore[arg-type]
    oracle = _brute(options, demand, routing, spare, lo, hi)
    if sol is None:
        assert oracle is None
        return
    assert oracle is not None
    assert sol.objective == pytest.approx(oracle, rel=1e-6, abs=1e-9)
    for o, n in zip(options, sol.counts, strict=True):
        assert 0 <= n <= o.max_replicas
    assert lo <= sum(sol.counts) <= hi
    assert mix_capacity(options, sol.counts, routing) >= demand - 1e-9  # type: ignore[arg-type]
    for o in options:  # each variant alone, when it fits, costs at least the mix
        # a positive demand needs at least one replica, however small
        least = 1 if demand > 0 else 0
        alone = max(math.ceil(demand / o.capacity_rps - 1e-9) + spare, lo, least)
        if alone <= min(o.max_replicas, hi):
            assert sol.objective <= alone * o.weight + 1e-9


def test_round_robin_is_bounded_by_the_slowest_replica_and_load_aware_adds() -> None:
    fast = MixOption("fast", capacity_rps=20.0, weight=3.0, max_replicas=4)
    slow = MixOption("slow", capacity_rps=6.0, weight=1.1, max_replicas=30)
    rr = solve_mix([fast, slow], 120.0, "round-robin")
    la = solve_mix([fast, slow], 120.0, "load-aware")
    assert rr is not None
    assert la is not None
    # round-robin: any slow replica drags every share to 6 RPS, so 20 slow (22.0) beats
    # 4 fast + 16 slow (29.6); load-aware: 4 × 20 + 7 × 6 = 122 RPS for 19.7
    assert rr.counts == (0, 20)
    assert la.counts == (4, 7)
    assert la.objective == pytest.approx(4 * 3.0 + 7 * 1.1)


def test_preference_breaks_cost_ties() -> None:
    a = MixOption("a", capacity_rps=10.0, weight=2.0, max_replicas=5, preference=0)
    b = MixOption("b", capacity_rps=10.0, weight=2.0, max_replicas=5, preference=1)
    sol = solve_mix([a, b], 30.0, "load-aware")
    assert sol is not None
    assert sol.counts == (0, 3)


# -- the plan ------------------------------------------------------------------------------------


def test_round_robin_plan_shows_the_mix_against_each_variant_alone() -> None:
    p = plan_service(_svc(_doc()).spec, "m")
    assert p.mix is not None
    assert p.mix.routing == "round-robin"
    by = {v.name: v for v in p.variants}
    h100, l40s = by["h100-sxm-80gb"], by["l40s-48gb"]
    # one H100 carries more but its maxReplicas (4) cannot carry the load alone
    assert h100.capacity_rps_per_replica > 2 * l40s.capacity_rps_per_replica
    assert not h100.single_variant.feasible
    assert l40s.single_variant.feasible
    assert p.cost_per_hour is not None
    assert l40s.single_variant.cost_per_hour is not None
    assert p.cost_per_hour <= l40s.single_variant.cost_per_hour
    assert p.replicas is not None
    assert p.replicas.total == sum(v.replicas for v in p.variants)
    assert p.gpus_total == sum(v.gpus for v in p.variants)
    assert p.mix.capacity_rps >= p.mix.demand_rps
    assert sum(v.rps_share for v in p.variants) == pytest.approx(1.0)
    assert " vs " in p.mix.comparison
    assert "L40S-48GB" in p.mix.comparison


def test_load_aware_plan_mixes_and_is_cheaper_than_round_robin() -> None:
    rr = plan_service(_svc(_doc()).spec, "m")
    la = plan_service(_svc(_doc({"spec": {"gateway": {"inferencePool": {}}}})).spec, "m")
    assert la.mix is not None
    assert la.mix.routing == "load-aware"
    used = {v.name: v.replicas for v in la.variants if v.replicas > 0}
    assert set(used) == {"h100-sxm-80gb", "l40s-48gb"}
    assert la.cost_per_hour is not None
    assert rr.cost_per_hour is not None
    assert la.cost_per_hour < rr.cost_per_hour
    carried = sum(v.replicas * v.capacity_rps_per_replica for v in la.variants)
    assert carried >= la.design_rps
    for v in la.variants:
        if v.replicas:
            assert v.rps_per_replica <= v.capacity_rps_per_replica + 1e-9


@settings(max_examples=8, deadline=None)
@given(peak=st.floats(5.0, 150.0), h100_max=st.integers(1, 8), load_aware=st.booleans())
def test_the_mix_plan_never_costs_more_than_the_best_single_variant_that_fits(
    peak: float, h100_max: int, load_aware: bool
) -> None:
    patch: dict[str, Any] = {"spec": {"workload": {"rps": {"mean": peak / 2, "peak": peak}}}}
    if load_aware:
        patch["spec"]["gateway"] = {"inferencePool": {"name": "pool"}}
    doc = _doc(patch)
    doc["spec"]["hardware"]["variants"][0]["maxReplicas"] = h100_max
    p = plan_service(_svc(doc).spec, "m")
    singles = [v.single_variant.cost_per_hour for v in p.variants if v.single_variant.feasible]
    if singles:
        assert p.feasible
        assert p.cost_per_hour is not None
        assert p.cost_per_hour <= min(c for c in singles if c is not None) + 1e-9
    if p.feasible:
        for v in p.variants:
            assert v.replicas <= v.max_replicas
        assert p.mix is not None
        assert p.mix.capacity_rps >= p.mix.demand_rps - 1e-9


def test_without_prices_the_mix_minimises_gpus_and_says_so() -> None:
    doc = _doc()
    for v in doc["spec"]["hardware"]["variants"]:
        v.pop("gpuHourPrice")
    p = plan_service(_svc(doc).spec, "m")
    assert p.mix is not None
    assert p.mix.objective == "gpu-hours"
    assert p.cost_per_hour is None
    assert any("minimises GPU-hours" in w for w in p.warnings)
    # fewest GPUs: the H100s carry 3× an L40S each, so they are used up to their bound
    assert {v.name: v.replicas for v in p.variants}["h100-sxm-80gb"] == 4


def test_no_mix_within_the_bounds_is_infeasible_with_the_reason() -> None:
    doc = _doc({"spec": {"workload": {"rps": {"mean": 500, "peak": 1000}}}})
    p = plan_service(_svc(doc).spec, "m")
    assert not p.feasible
    assert p.replicas is None
    assert "maxReplicas" in p.infeasible_reasons[0]


def test_one_gpu_form_has_no_variants() -> None:
    p = plan_service(_svc(BASE).spec, "one")
    assert p.variants == []
    assert p.mix is None


def test_cli_shows_the_comparison_and_json_has_the_variant_keys() -> None:
    table = runner.invoke(app, ["plan", str(MIXED)])
    assert table.exit_code == 0, table.output
    assert "vs" in table.output
    assert "round-robin" in table.output
    out = runner.invoke(app, ["plan", str(MIXED), "-o", "json"])
    data = json.loads(out.stdout)
    assert {"replicas", "gpus_total", "cost_per_hour", "feasible"} <= set(data)
    keys = {"gpu", "tensor_parallel_size", "replicas", "gpus", "rps_share", "cost_per_hour"}
    assert all(keys <= set(v) for v in data["variants"])
    assert data["mix"]["solver"].startswith("scipy.optimize.milp")
    assert "variant_plans" not in data


def test_a_variant_alone_must_keep_the_services_min_replicas() -> None:
    doc = _doc({"spec": {"workload": {"rps": {"mean": 6.5, "peak": 13}}}})
    doc["spec"]["hardware"]["variants"][0]["maxReplicas"] = 1  # minReplicas is 2
    p = plan_service(_svc(doc).spec, "m")
    h100 = next(v for v in p.variants if v.name == "h100-sxm-80gb")
    assert not h100.single_variant.feasible
    assert "minReplicas=2 exceeds this variant's maxReplicas=1" in h100.single_variant.reason
    assert p.mix is not None
    assert "minReplicas=2" in p.mix.comparison
    assert p.replicas is not None
    assert p.replicas.total >= 2


# -- tensorParallelSize: auto within the mix ----------------------------------------------------


grouped_option = st.builds(
    MixOption,
    name=st.just("v"),
    capacity_rps=st.floats(0.5, 30.0),
    weight=st.floats(0.1, 20.0),
    max_replicas=st.integers(0, 5),
    preference=st.integers(-1, 1),
    group=st.sampled_from(["", "a", "b"]),
)


def _one_layout_each(options: list[MixOption], counts: tuple[int, ...]) -> bool:
    used = [o.group for o, n in zip(options, counts, strict=True) if n > 0 and o.group]
    return len(used) == len(set(used))


@settings(max_examples=60, deadline=None)
@given(
    options=st.lists(grouped_option, min_size=1, max_size=4),
    demand=st.floats(0.0, 80.0),
    routing=st.sampled_from(["round-robin", "load-aware"]),
)
def test_the_mix_uses_at_most_one_layout_of_a_variant_and_is_optimal_among_those(
    options: list[MixOption], demand: float, routing: str
) -> None:
    sol = solve_mix(options, demand, routing, 0, 1, 10)  # type: ignore[arg-type]
    # the oracle: every count vector using at most one option per group
    best: float | None = None
    for counts in itertools.product(*(range(o.max_replicas + 1) for o in options)):
        if not _one_layout_each(options, counts) or not 1 <= sum(counts) <= 10:
            continue
        used = [o.capacity_rps for o, n in zip(options, counts, strict=True) if n > 0]
        if routing == "round-robin":
            ok = sum(counts) >= math.ceil(demand / min(used) - 1e-9)
        else:
            carried = sum(o.capacity_rps * n for o, n in zip(options, counts, strict=True))
            ok = carried >= demand - 1e-6
        if ok:
            cost = sum(o.weight * n for o, n in zip(options, counts, strict=True))
            best = cost if best is None else min(best, cost)
    if sol is None:
        assert best is None
        return
    assert best is not None
    assert _one_layout_each(options, sol.counts)
    assert sol.objective == pytest.approx(best, rel=1e-6, abs=1e-9)


def _auto_mix(tp: int | str, l40s_max: int = 16) -> dict[str, Any]:
    """The issue's mix: H100 TP 1 ≤ 2, L40S TP 1, A100 at ``tp`` ≤ 4; Llama-3.1-8B, 120 RPS."""
    doc = _doc()
    doc["spec"]["hardware"]["variants"] = [
        {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1, "maxReplicas": 2, "gpuHourPrice": 3.0},
        {"gpu": "L40S-48GB", "tensorParallelSize": 1, "maxReplicas": l40s_max, "gpuHourPrice": 1.1},
        {"gpu": "A100-SXM-80GB", "tensorParallelSize": tp, "maxReplicas": 4, "gpuHourPrice": 1.8},
    ]
    return doc


def test_an_auto_variant_takes_the_layout_that_is_cheapest_within_the_mix() -> None:
    auto = plan_service(_svc(_auto_mix("auto")).spec, "m")
    pinned = plan_service(_svc(_auto_mix(1)).spec, "m")
    assert auto.cost_per_hour is not None
    assert pinned.cost_per_hour is not None
    # alone, four A100 replicas must carry 120 RPS (TP 8); in the mix they carry the L40S'
    # shortfall, which TP 1 does for an eighth of the GPUs
    assert auto.cost_per_hour <= pinned.cost_per_hour + 1e-9
    a100 = next(v for v in auto.variants if v.gpu == "A100-SXM-80GB")
    assert a100.replicas > 0
    assert a100.tensor_parallel_size == 1
    assert auto.variant_plans[2].tensor_parallel_size == 1
    # its single-variant alternative is still what auto chooses alone
    assert a100.single_variant.feasible
    assert a100.single_variant.gpus == 4 * 8
    assert auto.mix is not None
    assert any("tensorParallelSize auto" in r and "runs TP 1" in r for r in auto.mix.reasons)


@settings(max_examples=6, deadline=None)
@given(
    model=st.sampled_from(["llama-3.1-8b", "qwen2.5-14b", "mistral-7b-v0.3"]),
    gpus=st.lists(
        st.sampled_from(["A100-SXM-80GB", "L40S-48GB", "H100-SXM-80GB", "L4-24GB"]),
        min_size=2,
        max_size=2,
        unique=True,
    ),
    caps=st.tuples(st.integers(1, 6), st.integers(1, 6)),
    prices=st.tuples(st.floats(0.5, 4.0), st.floats(0.5, 4.0)),
    peak=st.floats(10.0, 120.0),
    load_aware=st.booleans(),
)
def test_a_mix_with_an_auto_variant_is_never_dearer_than_any_pinned_tp(
    model: str,
    gpus: list[str],
    caps: tuple[int, int],
    prices: tuple[float, float],
    peak: float,
    load_aware: bool,
) -> None:
    doc = _doc({"spec": {"workload": {"rps": {"mean": peak / 2, "peak": peak}}}})
    doc["spec"]["model"] = {"name": model, "catalog": model}
    if load_aware:
        doc["spec"]["gateway"] = {"inferencePool": {"name": "pool"}}

    def with_tp(tp: int | str) -> Plan:
        doc["spec"]["hardware"]["variants"] = [
            {
                "gpu": gpus[0],
                "tensorParallelSize": 1,
                "maxReplicas": caps[0] * 4,
                "gpuHourPrice": prices[0],
            },
            {
                "gpu": gpus[1],
                "tensorParallelSize": tp,
                "maxReplicas": caps[1],
                "gpuHourPrice": prices[1],
            },
        ]
        return plan_service(_svc(doc).spec, "m")

    auto = with_tp("auto")
    for tp in [1, 2, 4, 8]:
        try:
            pinned = with_tp(tp)
        except SpecError:  # not a valid TP for this model on this GPU
            continue
        if not pinned.feasible:
            continue
        assert auto.feasible, (tp, auto.infeasible_reasons)
        assert auto.cost_per_hour is not None
        assert pinned.cost_per_hour is not None
        assert auto.cost_per_hour <= pinned.cost_per_hour * (1 + 1e-9) + 1e-9, tp
    # every layout the mix plans is one it renders: a Deployment, one node per replica
    assert all(p.nodes_per_replica == 1 for p in auto.variant_plans)


def test_a_variant_is_planned_within_one_node_and_the_mix_does_without_one_that_cannot() -> None:
    """Llama-3.1-405B BF16 on H100 or H200: an H100 replica needs 3 nodes, which a mix's
    Deployment cannot run. The H100 variant is planned within one node (it cannot serve there,
    and says what would), the mix runs H200s, and every variant renders; before, the plan
    chose nothing of it but kept its 3-node plan, and the render refused the whole spec."""
    doc = _doc()
    doc["spec"]["model"] = {
        "name": "meta-llama/Llama-3.1-405B-Instruct",
        "catalog": "llama-3.1-405b",
        "weightDtype": "bf16",
    }
    doc["spec"]["hardware"]["variants"] = [
        {"gpu": "H100-SXM-80GB", "maxReplicas": 4, "gpuHourPrice": 3.0},
        {"gpu": "H200-SXM-141GB", "maxReplicas": 2, "gpuHourPrice": 4.0},
    ]
    doc["spec"]["workload"]["rps"] = {"mean": 2, "peak": 4}
    doc["spec"]["slo"] = {"ttftP99Seconds": 5.0, "tpotP99Seconds": 0.1}
    doc["spec"]["scaling"] = {"minReplicas": 1, "maxReplicas": 4}
    service = _svc(doc)
    p = plan_service(service.spec, "big")
    assert p.feasible, p.infeasible_reasons
    assert all(v.nodes_per_replica == 1 for v in p.variant_plans)
    h100, h200 = p.variants
    assert (h100.replicas, h200.gpu) == (0, "H200-SXM-141GB")
    assert h200.replicas > 0
    assert not h100.single_variant.feasible
    assert "a mix's variants run one node per replica" in h100.single_variant.reason
    assert "raise spec.hardware.maxNodesPerReplica" not in h100.single_variant.reason
    bundle = render_bundle("big", "prod", service.spec, p, p.replica_count)
    assert [w["metadata"]["name"] for w in bundle.workloads] == [
        "big-h100-sxm-80gb",
        "big-h200-sxm-141gb",
    ]


def test_an_option_with_no_replicas_left_does_not_make_a_feasible_mix_infeasible() -> None:
    # HiGHS' presolve (SciPy 1.17) called this program infeasible while the 1.07-req/s column,
    # fixed at 0, was in it, and gave 1 × 1.07 + 2 × 12 (cost 4) as optimal when the small
    # column could be used: 3 × 12 req/s carries 1.2e-5 req/s with 2 spare replicas
    big = MixOption("big", 12.0, 1.0, 3)
    none_left = MixOption("small", 1.0703125, 1.0, 0)
    sol = solve_mix([big, none_left], 1.2e-5, "load-aware", 2, 0, 12)
    assert sol is not None
    assert sol.counts == (3, 0)
    dear = MixOption("small", 1.0703125, 2.0, 1)
    sol = solve_mix([none_left, dear, big], 1.2e-5, "load-aware", 2, 0, 12)
    assert sol is not None
    assert (sol.counts, sol.objective) == ((0, 0, 3), 3.0)
    # a demand a millionth of a req/s over one replica's capacity is carried by it
    one = solve_mix([MixOption("v", 2.0, 1.0, 1)], 1e-6, "load-aware", 1, 0, 12)
    assert one is not None
    assert one.counts == (1,)
