"""spec.workload.classes: validation naming the field, the mixture's quantiles, the planner's
rule (the binding class, the slack, showback) and the plan views' per-class rows."""

import json
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.helpers import manifest
from tokenscale.api.classes import mixture_quantile, tier_of
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_manifests
from tokenscale.api.workload_stats import TokenDistribution
from tokenscale.cli.app import app
from tokenscale.planning import plan_service
from tokenscale.planning.result import Plan


def chat(**over: Any) -> dict[str, Any]:
    return {
        "name": "chat",
        "priority": "critical",
        "rps": {"mean": 10, "peak": 20},
        "inputTokens": {"mean": 800, "p99": 3000},
        "outputTokens": {"mean": 200, "p99": 600},
        "slo": {"ttftP99Seconds": 0.5, "tpotP99Seconds": 0.03},
    } | over


def agent(**over: Any) -> dict[str, Any]:
    return {
        "name": "agent",
        "priority": "standard",
        "rps": {"mean": 3, "peak": 6},
        "inputTokens": {"mean": 2000, "p99": 6000},
        "outputTokens": {"mean": 300, "p99": 900},
        "slo": {"ttftP99Seconds": 5.0, "tpotP99Seconds": 0.1},
    } | over


def batch(**over: Any) -> dict[str, Any]:
    return {
        "name": "batch",
        "priority": "sheddable",
        "rps": {"mean": 5, "peak": 40},
        "inputTokens": {"mean": 1500, "p99": 5000},
        "outputTokens": {"mean": 300, "p99": 800},
    } | over


def doc(classes: list[dict[str, Any]], **workload: Any) -> dict[str, Any]:
    wl: dict[str, Any] = {"rps": None, "inputTokens": None, "outputTokens": None}
    return manifest(workload={**wl, "classes": classes, **workload})


def plan_of(d: dict[str, Any]) -> Plan:
    (service,) = parse_manifests(yaml.safe_dump(d))
    return plan_service(service.spec, service.metadata.name)


def issues(d: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as exc:
        plan_of(d)
    return [(i.path, i.message) for i in exc.value.issues]


BAD: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "duplicate names",
        doc([chat(), agent(name="chat")]),
        "spec.workload",
        "the name 'chat' is given twice",
    ),
    (
        "stated mean disagrees with the sum",
        doc([chat(), agent()], rps={"mean": 20, "peak": 26}),
        "spec.workload",
        "rps.mean=20 disagrees with the classes' sum 13",
    ),
    (
        "stated token mean disagrees",
        doc([chat(), agent()], inputTokens={"mean": 5000, "p99": 9000}),
        "spec.workload",
        "inputTokens.mean=5000 disagrees",
    ),
    (
        "sheddable with an SLO",
        doc([chat(), batch(slo={"ttftP99Seconds": 2.0})]),
        "spec.workload.classes[1]",
        "cannot be promised an SLO",
    ),
    (
        "quota below its own mean",
        doc([chat(quota={"maxRps": 5})]),
        "spec.workload.classes[0]",
        "quota.maxRps=5 is below the class's own rps.mean=10",
    ),
    (
        "token quota below its own mean",
        doc([chat(quota={"maxTokensPerSecond": 1000})]),
        "spec.workload.classes[0]",
        "quota.maxTokensPerSecond=1000 is below",
    ),
    (
        "nothing guaranteed",
        doc([batch()]),
        "spec.workload",
        "no class is critical or standard",
    ),
    (
        "unknown tier",
        doc([chat(priority="urgent")]),
        "spec.workload.classes[0].priority",
        "",
    ),
]


@pytest.mark.parametrize(("case", "d", "path", "text"), BAD, ids=[b[0] for b in BAD])
def test_each_inconsistency_names_its_field(
    case: str, d: dict[str, Any], path: str, text: str
) -> None:
    found = issues(d)
    assert any(p.startswith(path) and text in m for p, m in found), f"{case}: {found}"


def test_the_total_is_the_classes_sum_when_left_out_and_agrees_when_stated() -> None:
    (service,) = parse_manifests(yaml.safe_dump(doc([chat(), agent(), batch()])))
    w = service.spec.workload
    assert w.rps.mean == pytest.approx(18)
    assert w.rps.design_rps == pytest.approx(66)  # peaks added: the safe side
    assert w.input_tokens.mean == pytest.approx((10 * 800 + 3 * 2000 + 5 * 1500) / 18)
    assert w.input_tokens.p99 is not None
    assert 3000 <= w.input_tokens.p99 <= 6000
    stated = doc([chat(), agent()], rps={"mean": 13, "peak": 24})
    (ok,) = parse_manifests(yaml.safe_dump(stated))
    assert ok.spec.workload.rps.design_rps == 24


def test_integer_priorities_map_to_tiers_by_sign() -> None:
    assert [tier_of(p) for p in (5, 0, -1)] == ["critical", "standard", "sheddable"]
    p = plan_of(doc([chat(priority=7), batch(priority=-3)]))
    assert [(c.tier, c.priority) for c in p.classes] == [("critical", 7), ("sheddable", -3)]


dist = st.builds(
    lambda mean, tail95, tail99: TokenDistribution(
        mean=mean, p95=mean * tail95, p99=mean * tail95 * tail99
    ),
    st.floats(1, 10_000),
    st.floats(1, 5),
    st.floats(1, 3),
)


@given(st.lists(st.tuples(st.floats(0.01, 100), dist), min_size=1, max_size=4))
def test_the_mixture_quantile_lies_between_the_parts(parts: list[tuple[float, Any]]) -> None:
    q = mixture_quantile(parts, 0.99)
    own = [d.p99 for _, d in parts]
    assert min(own) * (1 - 1e-6) <= q <= max(own) * (1 + 1e-6)


def test_a_dominant_part_pulls_the_mixture_to_its_own_quantile() -> None:
    short, long = TokenDistribution(mean=100, p99=300), TokenDistribution(mean=4000, p99=9000)
    small_long = mixture_quantile([(99.0, short), (1.0, long)], 0.99)
    big_long = mixture_quantile([(1.0, short), (99.0, long)], 0.99)
    assert small_long < big_long
    assert big_long == pytest.approx(9000, rel=0.05)


def test_the_strict_class_binds_and_every_class_has_its_own_checks() -> None:
    p = plan_of(doc([chat(), agent(), batch()]))
    by = {c.name: c for c in p.classes}
    s = p.classes_summary
    assert s is not None
    assert s.binding_class == "chat"
    assert by["chat"].binding
    assert not by["agent"].binding
    assert by["chat"].replicas_for_slo == p.replica_count
    assert by["agent"].replicas_for_slo is not None
    assert by["agent"].replicas_for_slo <= by["chat"].replicas_for_slo
    assert {c.name for c in by["chat"].slo_checks} == {"ttft_p99", "tpot_p99"}
    assert [c.target_s for c in by["agent"].slo_checks] == [5.0, 0.1]
    assert by["batch"].slo_checks == []
    assert by["batch"].replicas_for_slo is None
    assert s.reason.startswith(f"chat binds at {p.replica_count} replicas")
    assert "batch adds none" in s.reason
    # the fleet is sized for the guaranteed load only
    assert p.design_rps == pytest.approx(26)


def test_a_loose_strict_swap_moves_the_binding() -> None:
    loose_chat = chat(slo={"ttftP99Seconds": 10.0, "tpotP99Seconds": 0.2})
    strict_agent = agent(slo={"ttftP99Seconds": 0.8, "tpotP99Seconds": 0.02})
    p = plan_of(doc([loose_chat, strict_agent]))
    assert p.classes_summary is not None
    assert p.classes_summary.binding_class == "agent"


def short_and_long(chat_ttft_s: float, agent_ttft_s: float) -> dict[str, Any]:
    """Short chat prompts (P99 1,000) beside long agent prompts (P99 20,000): the mixture's
    P99 prompt lies between them, too long for chat's requests and too short for the agent's."""
    short = chat(
        inputTokens={"mean": 300, "p99": 1000},
        slo={"ttftP99Seconds": chat_ttft_s},
    )
    long = agent(inputTokens={"mean": 6000, "p99": 20000}, slo={"ttftP99Seconds": agent_ttft_s})
    return doc([short, long], maxContextTokens=32768)


def test_each_class_is_checked_with_its_own_token_lengths() -> None:
    # At the mixture's P99 prompt both classes' TTFT was one figure: chat bound (a tight 0.4 s)
    # and the agent's looked met; at its own 20,000-token P99 (whose own prefill alone takes
    # most of 0.6 s on one H100, and the request overhead 0.11 s more) the agent needs far more.
    p = plan_of(short_and_long(0.4, 0.8))
    s = p.classes_summary
    assert s is not None
    by = {c.name: c for c in p.classes}
    assert s.binding_class == "agent"
    assert by["agent"].binding
    assert by["agent"].replicas_for_slo == p.replica_count
    assert by["chat"].replicas_for_slo is not None
    assert by["chat"].replicas_for_slo < by["agent"].replicas_for_slo
    (chat_ttft,) = by["chat"].slo_checks
    (agent_ttft,) = by["agent"].slo_checks
    assert chat_ttft.estimate_s < agent_ttft.estimate_s <= 0.8
    assert s.reason.startswith(f"agent binds at {p.replica_count} replicas")


def test_a_short_class_is_not_failed_by_the_long_class_prompts() -> None:
    # chat's 0.3 s TTFT cannot hold for the mixture's P99 prompt; it holds for chat's own.
    p = plan_of(short_and_long(0.3, 2.0))
    assert p.replicas is not None
    by = {c.name: c for c in p.classes}
    assert all(c.met for c in by["chat"].slo_checks)
    assert all(c.met for c in by["agent"].slo_checks)
    assert by["chat"].slo_checks[0].estimate_s < by["agent"].slo_checks[0].estimate_s


@settings(max_examples=12, deadline=None)
@given(
    shorter=st.floats(6000, 20000),
    longer_by=st.floats(1.0, 1.5),
    ttft_s=st.floats(0.4, 3.0),
)
def test_a_longer_own_tail_never_needs_fewer_replicas(
    shorter: float, longer_by: float, ttft_s: float
) -> None:
    def needs(p99: float) -> tuple[float, Plan]:
        d = doc(
            [
                chat(inputTokens={"mean": 300, "p99": 1000}, slo={"ttftP99Seconds": 0.4}),
                agent(inputTokens={"mean": 6000, "p99": p99}, slo={"ttftP99Seconds": ttft_s}),
            ],
            maxContextTokens=32768,
        )
        p = plan_of(d)
        (a,) = [c for c in p.classes if c.name == "agent"]
        return (float("inf") if a.replicas_for_slo is None else a.replicas_for_slo), p

    short_n, p = needs(shorter)
    long_n, _ = needs(min(shorter * longer_by, 30000.0))
    assert long_n >= short_n
    if p.replicas is not None:  # the fleet serves every guaranteed class's own plan
        assert all(c.replicas_for_slo is not None for c in p.classes)
        assert max(c.replicas_for_slo or 0 for c in p.classes) == p.replica_count


def test_showback_sums_to_the_fleet() -> None:
    p = plan_of(doc([chat(), agent(), batch()]))
    assert p.gpus_total is not None
    assert p.cost_per_hour is not None
    assert sum(c.gpus for c in p.classes) == pytest.approx(p.gpus_total)
    assert sum(c.cost_per_hour or 0 for c in p.classes) == pytest.approx(p.cost_per_hour)
    assert all(c.cost_per_million_tokens and c.cost_per_million_tokens > 0 for c in p.classes)


def test_sheddable_is_served_from_slack_and_guaranteeing_it_costs_more() -> None:
    p = plan_of(doc([chat(), agent(), batch()]))
    s = p.classes_summary
    assert s is not None
    assert p.gpus_total is not None
    assert 0.0 <= s.sheddable_served_at_peak <= s.sheddable_served_at_mean <= 1.0
    assert s.sheddable_served_at_peak < 1.0  # a 40 RPS burst does not fit the slack
    assert s.guarantee_all_gpus is not None
    assert s.guarantee_all_gpus > p.gpus_total
    heavier = plan_of(doc([chat(), agent(), batch(rps={"mean": 10, "peak": 80})]))
    assert heavier.classes_summary is not None
    assert heavier.classes_summary.sheddable_served_at_peak <= s.sheddable_served_at_peak


@settings(max_examples=8, deadline=None)
@given(
    rps=st.floats(0.5, 200),
    burst=st.floats(1, 10),
    prompt=st.floats(50, 8000),
    answer=st.floats(10, 2000),
)
def test_adding_a_sheddable_class_never_adds_guaranteed_replicas(
    rps: float, burst: float, prompt: float, answer: float
) -> None:
    alone = plan_of(doc([chat(), agent()]))
    shed = batch(
        rps={"mean": rps, "peak": rps * burst},
        inputTokens={"mean": prompt},
        outputTokens={"mean": answer},
    )
    with_batch = plan_of(doc([chat(), agent(), shed]))
    assert with_batch.replica_count == alone.replica_count
    assert with_batch.gpus_total == alone.gpus_total


def test_every_view_shows_the_classes(tmp_path: Any) -> None:
    path = tmp_path / "svc.yaml"
    path.write_text(yaml.safe_dump(doc([chat(), agent(), batch()])))
    runner = CliRunner()
    data = json.loads(runner.invoke(app, ["plan", str(path), "-o", "json"]).stdout)
    assert [c["name"] for c in data["classes"]] == ["chat", "agent", "batch"]
    assert data["classes_summary"]["binding_class"] == "chat"
    for fmt in ("table", "wide", "markdown", "csv", "short"):
        out = runner.invoke(app, ["plan", str(path), "-o", fmt], env={"COLUMNS": "200"}).stdout
        assert "chat binds" in out, fmt
        assert "batch" in out, fmt


def test_check_judges_quotas_and_priority_isolation() -> None:
    from tokenscale.render import render_bundle  # noqa: PLC0415
    from tokenscale.render.readiness import readiness  # noqa: PLC0415

    def items(d: dict[str, Any]) -> dict[str, Any]:
        (service,) = parse_manifests(yaml.safe_dump(d))
        p = plan_service(service.spec, "test")
        objects = render_bundle("test", "team", service.spec, p, p.replica_count).objects
        return {i.item: i for i in readiness(service.spec, p, objects)}

    bare = items(doc([chat(), batch()]))
    assert not bare["tenant-quotas"].ok
    assert "spec.workload.classes[1] (batch)" in bare["tenant-quotas"].why
    assert not bare["priority-isolation"].ok
    assert "no spec.gateway.inferencePool" in bare["priority-isolation"].why
    full = doc([chat(quota={"maxRps": 30}), batch(quota={"maxRps": 50})])
    full["spec"]["gateway"] = {"inferencePool": {}}
    good = items(full)
    assert good["tenant-quotas"].ok
    assert good["priority-isolation"].ok, good["priority-isolation"].why
    assert "tenant-quotas" not in items(manifest())


def test_a_guaranteed_class_that_cannot_be_served_says_so_and_promises_nothing() -> None:
    impossible = chat(slo={"ttftP99Seconds": 0.001, "tpotP99Seconds": 0.001})
    p = plan_of(doc([impossible, batch()]))
    s = p.classes_summary
    assert s is not None
    assert not p.feasible
    assert "cannot be met on this hardware" in s.reason
    assert s.sheddable_served_at_peak == 0.0
    assert all(c.served_fraction_at_mean == 0.0 for c in p.classes)
    assert all(c.gpus == 0.0 for c in p.classes)


def test_classes_plan_over_a_gpu_mix() -> None:
    d = doc([chat(slo={"ttftP99Seconds": 2.0, "tpotP99Seconds": 0.06}), agent(), batch()])
    d["spec"]["hardware"] = {
        "variants": [
            {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1, "maxReplicas": 4},
            {"gpu": "L40S-48GB", "tensorParallelSize": 1, "maxReplicas": 24},
        ]
    }
    d["spec"]["gateway"] = {"inferencePool": {"endpointPicker": "epp"}}
    p = plan_of(d)
    assert p.feasible, p.infeasible_reasons
    assert len(p.pools) == 2
    assert p.gpus_total is not None
    assert sum(c.gpus for c in p.classes) == pytest.approx(p.gpus_total, rel=1e-6)
