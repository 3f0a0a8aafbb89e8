"""Length classes (``spec.serving.lengthClasses``): the spec's rules, the workload split, the
plan's pools and its comparison with one shared pool, the views, and the replay that routes
each request to its class's pool by prompt length."""

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.helpers import ROOT, manifest
from tokenscale.api.errors import SpecError
from tokenscale.api.length_classes import LengthClass
from tokenscale.api.manifest import parse_manifests
from tokenscale.api.workload import Workload
from tokenscale.cli.app import app
from tokenscale.planning import plan_service
from tokenscale.planning.length_split import LogNormal, split
from tokenscale.simulation.length_classes import replay_length_classes, smallest_fleets
from tokenscale.simulation.run import SimOptions
from tokenscale.simulation.trace import Trace, TraceRequest

EXAMPLE = ROOT / "deploy" / "examples" / "length-classes" / "llama-3.1-8b-h100-length.yaml"
CLASSES = [{"name": "short", "maxInputTokens": 2048}, {"name": "long"}]


def _spec(**serving: Any) -> Any:
    doc = manifest(
        serving={"lengthClasses": CLASSES, **serving},
        workload={
            "rps": {"mean": 20, "peak": 40},
            "inputTokens": {"mean": 2000, "p95": 9000, "p99": 20000},
            "outputTokens": {"mean": 250, "p99": 1200},
            "maxContextTokens": 32768,
        },
    )
    return parse_manifests(json.dumps(doc))[0]


def _invalid(patch: dict[str, Any]) -> str:
    with pytest.raises(SpecError) as err:
        parse_manifests(json.dumps(manifest(**patch)))
    return str(err.value)


@pytest.mark.parametrize(
    ("classes", "text"),
    [
        ([{"name": "all"}], "lengthClasses"),
        ([{"name": "a"}, {"name": "b"}], "lengthClasses[0] (a): maxInputTokens is required"),
        (
            [{"name": "a", "maxInputTokens": 10}, {"name": "b", "maxInputTokens": 20}],
            "the last class takes the rest",
        ),
        (
            [
                {"name": "a", "maxInputTokens": 500},
                {"name": "b", "maxInputTokens": 100},
                {"name": "c"},
            ],
            "maxInputTokens must rise",
        ),
        ([{"name": "a", "maxInputTokens": 5}, {"name": "a"}], "the name 'a' is given twice"),
        (
            [{"name": "a", "maxInputTokens": 5, "share": 0.5}, {"name": "b"}],
            "share is given on some classes only",
        ),
        (
            [{"name": "a", "maxInputTokens": 5, "share": 0.5}, {"name": "b", "share": 0.2}],
            "the shares sum to 0.7",
        ),
    ],
)
def test_classes_that_cannot_be_planned_are_refused_naming_the_field(
    classes: list[dict[str, Any]], text: str
) -> None:
    message = _invalid({"serving": {"lengthClasses": classes}})
    assert "spec.serving.lengthClasses" in message
    assert text in message


@pytest.mark.parametrize(
    ("patch", "text"),
    [
        (
            {"serving": {"lengthClasses": CLASSES, "disaggregation": "on"}},
            "spec.serving.lengthClasses with spec.serving.disaggregation: on",
        ),
        (
            {
                "serving": {"lengthClasses": CLASSES},
                "scaling": {"actuation": "keda", "keda": {"serverAddress": "http://p:9090"}},
            },
            "spec.scaling.actuation: keda scales one workload; spec.serving.lengthClasses",
        ),
        (
            {
                "serving": {"lengthClasses": CLASSES},
                "workload": {
                    "rps": None,
                    "inputTokens": None,
                    "outputTokens": None,
                    "classes": [
                        {
                            "name": "chat",
                            "rps": {"mean": 5},
                            "inputTokens": {"mean": 500},
                            "outputTokens": {"mean": 100},
                        }
                    ],
                },
            },
            "spec.serving.lengthClasses with spec.workload.classes",
        ),
    ],
)
def test_shapes_no_rule_combines_are_refused(patch: dict[str, Any], text: str) -> None:
    assert text in _invalid(patch)


WORKLOAD = Workload.model_validate(
    {
        "rps": {"mean": 20, "peak": 40},
        "inputTokens": {"mean": 2000, "p99": 20000},
        "outputTokens": {"mean": 250, "p99": 1200},
    }
)


@settings(max_examples=40, deadline=None)
@given(
    mean=st.floats(50, 5000),
    ratio=st.floats(1.01, 20),
    bounds=st.lists(st.integers(1, 60_000), min_size=1, max_size=3, unique=True),
)
def test_the_split_keeps_the_requests_and_the_prompt_mean(
    mean: float, ratio: float, bounds: list[int]
) -> None:
    """Shares sum to 1, each class's rates are its share of the whole, and the share-weighted
    class means give back the workload's mean (no maxContextTokens: nothing left out)."""
    w = Workload.model_validate(
        {
            "rps": {"mean": 10, "peak": 30},
            "inputTokens": {"mean": mean, "p99": mean * ratio},
            "outputTokens": {"mean": 100},
        }
    )
    fit = LogNormal.through(w.input_tokens)
    edges = sorted(bounds)
    masses = [fit.cdf(b) - fit.cdf(a) for a, b in zip([0, *edges], [*edges, math.inf], strict=True)]
    if min(masses) < 1e-4:  # a class no prompt falls in is refused (tested below)
        return
    classes = [LengthClass(name=f"c{i}", max_input_tokens=b) for i, b in enumerate(edges)]
    parts = split(w, [*classes, LengthClass(name="rest")])
    assert sum(p.share for p in parts) == pytest.approx(1.0, abs=1e-9)
    for p in parts:
        assert p.workload.rps.mean == pytest.approx(10 * p.share)
        assert p.workload.rps.design_rps == pytest.approx(30 * p.share)
        t = p.workload.input_tokens
        assert p.above_tokens <= t.mean + 1
        assert p.max_tokens is None or t.p99_or_mean <= p.max_tokens
    means = [p.share * p.workload.input_tokens.mean for p in parts]
    if all(p.workload.input_tokens.mean > 1.0 for p in parts):  # not floored at one token
        assert sum(means) == pytest.approx(mean, rel=1e-6)


def test_stated_figures_are_kept_and_said_to_be_stated() -> None:
    stated = {"mean": 300, "p99": 1000}
    classes = [
        LengthClass.model_validate(
            {"name": "short", "maxInputTokens": 1024, "share": 0.8, "inputTokens": stated}
        ),
        LengthClass.model_validate({"name": "long", "share": 0.2}),
    ]
    short, long = split(WORKLOAD, classes)
    assert short.share == 0.8
    assert short.workload.input_tokens.mean == 300
    assert short.sources["share"] == "stated"
    assert short.sources["inputTokens"] == "stated"
    assert long.sources["inputTokens"].startswith("estimated")
    assert long.workload.input_tokens.mean > 1024
    assert short.workload.output_tokens == WORKLOAD.output_tokens


def test_a_class_no_prompt_falls_in_is_named() -> None:
    point = WORKLOAD.model_copy(
        update={"input_tokens": WORKLOAD.input_tokens.model_copy(update={"p99": None})}
    )
    classes = [LengthClass(name="short", max_input_tokens=512), LengthClass(name="long")]
    with pytest.raises(SpecError) as err:
        split(point, classes)
    assert err.value.paths == ("spec.serving.lengthClasses[0]",)
    assert "state its share and inputTokens" in str(err.value)


def test_the_plan_runs_one_pool_per_class_and_compares_one_shared_pool() -> None:
    service = _spec()
    plan = plan_service(service.spec, "svc")
    s = plan.length_split
    assert s is not None
    assert [p.name for p in plan.pools] == ["short", "long"]
    assert plan.coordination is not None
    assert plan.coordination.rule == "lengthClasses"
    assert plan.gpus_total == sum(p.gpus for p in plan.pools) == s.isolated_gpus
    shared = plan_service(
        service.spec.model_copy(
            update={"serving": service.spec.serving.model_copy(update={"length_classes": None})}
        ),
        "svc",
    )
    assert s.shared_gpus == shared.gpus_total
    for row, pool in zip(s.classes, plan.pools, strict=True):
        assert pool.load_rps == pytest.approx(row.rps_design)
        assert row.gpus == pool.gpus
    # a short prompt waits behind long ones on the shared pool, not in its own
    short = s.classes[0]
    assert short.ttft_p99_s is not None
    assert short.ttft_p99_shared_s is not None
    assert short.ttft_p99_s < short.ttft_p99_shared_s
    assert s.pays == (s.isolated_gpus <= (s.shared_gpus or 0))
    assert f"{s.isolated_gpus} GPUs in the class pools against {s.shared_gpus}" in s.verdict


def test_with_variants_each_class_chooses_its_own() -> None:
    doc = manifest(
        hardware={
            "gpu": None,
            "tensorParallelSize": None,
            "variants": [
                {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1, "gpuHourPrice": 3.0},
                {"gpu": "L40S-48GB", "tensorParallelSize": 1, "gpuHourPrice": 1.1},
            ],
        },
        serving={"lengthClasses": CLASSES},
    )
    plan = plan_service(parse_manifests(json.dumps(doc))[0].spec, "svc")
    names = [p.name for p in plan.pools]
    assert names == [
        "short-h100-sxm-80gb",
        "short-l40s-48gb",
        "long-h100-sxm-80gb",
        "long-l40s-48gb",
    ]
    assert not plan.is_mix  # the classes' rule, over each class's own mix
    assert plan.cost_per_hour == pytest.approx(
        sum(p.cost_per_hour or 0.0 for p in plan.pools if p.replicas > 0)
    )


runner = CliRunner()


@pytest.mark.parametrize("fmt", ["table", "wide", "short", "csv", "markdown", "json"])
def test_every_view_shows_the_classes(fmt: str) -> None:
    result = runner.invoke(app, ["plan", str(EXAMPLE), "-o", fmt], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    if fmt == "json":
        doc = json.loads(result.output)
        assert [p["name"] for p in doc["pools"]] == ["short", "long"]
        assert [c["name"] for c in doc["length_classes"]["classes"]] == ["short", "long"]
        return
    assert "short" in result.output
    assert "long" in result.output
    if fmt != "short":
        assert "one shared pool" in result.output
    else:
        assert "length: " in result.output


def _trace(seconds: float = 240.0, rps: float = 20.0, seed: int = 3) -> Trace:
    rng = random.Random(seed)
    fit = LogNormal.through(WORKLOAD.input_tokens)
    rows, t = [], 0.0
    while True:
        t += rng.expovariate(rps)
        if t > seconds:
            break
        prompt = min(30_000, max(1, round(math.exp(rng.gauss(fit.mu, fit.sigma)))))
        rows.append(TraceRequest(t, prompt, rng.randint(50, 400)))
    return Trace(tuple(rows), "synthetic")


@pytest.mark.parametrize("policy", ["static", "tokenscale"])
def test_the_replay_routes_each_request_to_its_class_pool(policy: Any) -> None:
    service = _spec()
    plan = plan_service(service.spec, "svc")
    trace = _trace()
    found = replay_length_classes(service.spec, plan, trace, SimOptions(cold_start_s=60.0), policy)
    short_n = sum(1 for r in trace.requests if r.input_tokens <= 2048)
    assert [c.requests for c in found.isolated_by_class] == [short_n, len(trace.requests) - short_n]
    assert [c.requests for c in found.shared_by_class] == [short_n, len(trace.requests) - short_n]
    routed = {p.name: p.requests for p in found.isolated.pools}
    rejected = found.isolated.rejected
    assert routed["short"] == short_n
    assert routed["long"] + rejected == len(trace.requests) - short_n
    assert [p.name for p in found.shared.pools] == ["shared"]
    assert found.shared.pools[0].requests + found.shared.rejected == len(trace.requests)
    if policy == "static":  # each pool pinned at its class's plan, for the trace's span
        assert found.isolated.replicas_max == {p.name: p.replicas for p in plan.pools}
        gpus = sum(p.gpus for p in plan.pools)
        assert found.isolated.gpu_hours == pytest.approx(gpus * trace.duration_s / 3600, rel=1e-6)


def test_simulate_prints_both_arrangements_and_refuses_what_it_cannot_replay(
    tmp_path: Path,
) -> None:
    trace = _trace(seconds=120.0)
    path = tmp_path / "t.csv"
    path.write_text(
        "arrival,input,output\n"
        + "".join(f"{r.arrival_s:.4f},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests)
    )
    args = ["simulate", str(EXAMPLE), "--trace", str(path), "--columns"]
    args += ["arrival=arrival,input=input,output=output", "--policy", "static"]
    result = runner.invoke(app, [*args, "-o", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [p["name"] for p in doc["isolated"]["pools"]] == ["short", "long"]
    assert sum(c["requests"] for c in doc["classes"]["shared"]) == len(trace.requests)
    refused = runner.invoke(app, [*args, "--fault", "replica-loss@1:00"])
    assert refused.exit_code == 2
    assert "--fault is not available for length classes" in refused.output
    oracle = runner.invoke(app, [*args[:-1], "oracle"])
    assert oracle.exit_code == 2
    assert "--policy oracle is not available for length classes" in oracle.output


def test_the_smallest_fleets_meet_the_target_for_every_class_and_one_fewer_does_not() -> None:
    service = _spec()
    plan = plan_service(service.spec, "svc")
    trace = _trace(seconds=180.0)
    opts = SimOptions(cold_start_s=60.0, timeline=False)
    found = smallest_fleets(service.spec, plan, trace, opts, target=0.99)
    assert found.shared is not None
    assert all(n is not None for n in found.isolated)
    assert found.replayed is not None
    for row in (*found.replayed.isolated_by_class, *found.replayed.shared_by_class):
        assert row.attainment >= 0.99
    if found.shared > 1:  # one replica fewer misses some class's target
        fewer = replay_length_classes(
            service.spec,
            plan,
            trace,
            opts,
            "static",
            ([n or 0 for n in found.isolated], found.shared - 1),
        )
        assert min(c.attainment for c in fewer.shared_by_class) < 0.99


@pytest.mark.parametrize(
    ("classes", "text"),
    [
        (
            [{"name": "short", "maxInputTokens": 16384}, {"name": "long"}],
            "lengthClasses[0].maxInputTokens=16384 is not below spec.workload.maxContextTokens",
        ),
        (
            [
                {
                    "name": "short",
                    "maxInputTokens": 1000,
                    "inputTokens": {"mean": 500, "p99": 3000},
                },
                {"name": "long"},
            ],
            "lengthClasses[0].inputTokens (P99 3000) exceeds its maxInputTokens=1000",
        ),
    ],
)
def test_bounds_that_cannot_hold_their_prompts_are_refused(
    classes: list[dict[str, Any]], text: str
) -> None:
    assert text in _invalid({"serving": {"lengthClasses": classes}})


def test_render_and_check_show_what_the_operator_runs_for_each_class() -> None:
    rendered = runner.invoke(app, ["render", str(EXAMPLE), "-o", "json"])
    assert rendered.exit_code == 0, rendered.output
    items = json.loads(rendered.output)["items"]
    kinds = [(o["kind"], o["metadata"]["name"]) for o in items]
    plan = plan_service(parse_manifests(EXAMPLE.read_text())[0].spec, "llama-8b-length")
    for pool in plan.pools:
        child = f"llama-8b-length-{pool.name}"
        assert ("InferenceService", child) in kinds
        dep = next(o for o in items if o["kind"] == "Deployment" and o["metadata"]["name"] == child)
        assert dep["spec"]["replicas"] == pool.replicas
    assert ("Deployment", "llama-8b-length") not in kinds
    checked = runner.invoke(app, ["check", str(EXAMPLE), "-o", "json"])
    assert checked.exit_code in (0, 1), checked.output
    names = [r["name"] for r in json.loads(checked.output)]
    assert names == ["llama-8b-length-short", "llama-8b-length-long"]
