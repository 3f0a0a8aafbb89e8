"""Live scaling of a GPU mix: the engine's need (in its primary variant's replicas) as the
fewest replicas whose split in the scale order carries it."""

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import ROOT
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import Plan, plan_service
from tokenscale.scaling import EngineInput, ScalingState, Snapshot, decide
from tokenscale.scaling.variant_order import mix_capacity_rps, mix_counts, mix_total

MIXED = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
NOW = 1_000_000.0


def _mixed(load_aware: bool) -> tuple[InferenceServiceSpec, Plan]:
    doc: dict[str, Any] = yaml.safe_load(MIXED.read_text())
    if load_aware:
        doc["spec"]["gateway"] = {"inferencePool": {"name": "pool"}}
    spec = parse_manifests(yaml.safe_dump(doc))[0].spec
    return spec, plan_service(spec, "mixed")


PLANS = {routing: _mixed(routing) for routing in (True, False)}


@settings(max_examples=150, deadline=None)
@given(load_aware=st.booleans(), primary=st.floats(0.0, 45.0))
def test_the_mix_total_is_the_fewest_that_carry_the_need(load_aware: bool, primary: float) -> None:
    _, plan = PLANS[load_aware]
    need = mix_total(plan, primary)
    most = sum(v.max_replicas for v in plan.variants)
    split = mix_counts(plan, need.total).counts
    assert all(split[v.name] <= v.max_replicas for v in plan.variants)
    assert mix_capacity_rps(plan, split) == need.carried_rps
    if need.total < most:
        assert need.carried_rps >= need.need_rps - 1e-9
    if need.total > 0:  # one fewer does not carry it
        fewer = mix_capacity_rps(plan, mix_counts(plan, need.total - 1).counts)
        assert fewer < need.need_rps - 1e-9
    # more need never asks for fewer replicas
    assert mix_total(plan, primary + 1.0).total >= need.total


def test_at_the_design_load_the_live_need_gives_back_the_plans_mix() -> None:
    """Behind a plain Service the L40S alone carries the design load (120 RPS); that need, in
    L40S replicas, behind a load-aware gateway is the plan's mix (4 H100 + 7 L40S)."""
    _, plain = PLANS[False]
    l40s = next(v for v in plain.variants if v.name == "l40s-48gb")
    alone = plain.design_rps / l40s.capacity_rps_per_replica  # the need in L40S replicas
    assert mix_total(plain, alone).total == plain.sized.total
    _, aware = PLANS[True]
    need = mix_total(aware, alone)
    assert need.total == aware.sized.total == 11
    assert mix_counts(aware, need.total).counts == {"h100-sxm-80gb": 4, "l40s-48gb": 7}


def _snap(rps: float, n: int) -> Snapshot:
    return Snapshot(
        at=NOW,
        replicas_reporting=n,
        waiting=0.0,
        running=20.0 * n,
        kv_usage_max=0.5,
        kv_usage_mean=0.5,
        ttft_p99_s=0.5,
        tpot_p99_s=0.03,
        request_rate_rps=rps,
        prompt_tps=800.0 * rps,
        generation_tps=200.0 * rps,
        newest_sample_age_s=1.0,
    )


def test_the_engine_scales_a_mix_up_on_observed_load_and_names_the_split() -> None:
    spec, plan = PLANS[True]
    d = decide(
        EngineInput(
            spec=spec,
            forecast=plan,
            snapshot=_snap(200.0, 10),  # 200 RPS observed, the plan's 10 replicas reporting
            state=ScalingState(decided_replicas=10),
            now_s=NOW,
            interval_s=15.0,
        )
    )
    assert d.source == "metrics"
    assert d.model_replicas is not None
    assert d.model_replicas > 10
    assert "the mix:" in d.why
    assert "the mix:" in d.reason
    # the total lands on the cheapest capacity with room: the H100s are at their bound
    split = mix_counts(plan, d.replicas).counts
    assert split["h100-sxm-80gb"] == 4
    assert split["l40s-48gb"] == d.replicas - 4
    assert mix_capacity_rps(plan, mix_counts(plan, d.model_replicas).counts) >= 200.0


def test_behind_a_plain_service_the_scale_order_fills_the_cheaper_replica_first() -> None:
    """Round-robin gives every replica the L40S's share, so an H100 there carries 6.4 RPS for
    $3.00/h: the L40S (6.4 RPS for $1.10/h) fill to their bound first. Behind a load-aware
    gateway the H100 carries its own 21.3 RPS and goes first."""
    _, plain = PLANS[False]
    assert mix_counts(plain, 25).counts == {"h100-sxm-80gb": 1, "l40s-48gb": 24}
    assert mix_counts(plain, 20).counts == {"h100-sxm-80gb": 0, "l40s-48gb": 20}
    _, aware = PLANS[True]
    assert mix_counts(aware, 3).counts == {"h100-sxm-80gb": 3, "l40s-48gb": 0}
