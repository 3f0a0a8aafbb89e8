"""``tokenscale simulate`` on every fleet shape: a prefill/decode spec replays what the operator
runs (the two pools, scaled per role), and every flag either works for a shape or exits 2
naming the flag and the shape — never parsed and then ignored."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import ROOT
from tokenscale.cli.app import app
from tokenscale.simulation.trace import Trace, synthetic_trace

PD = ROOT / "operator" / "tokenscale" / "data" / "playground" / "llama-3.1-8b-l4-pd.yaml"
MIXED = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
runner = CliRunner()


def _csv(tmp_path: Path, trace: Trace) -> Path:
    path = tmp_path / "t.csv"
    path.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        + "".join(f"{r.arrival_s},{r.input_tokens},{r.output_tokens}\n" for r in trace.requests)
    )
    return path


def _pd_args(tmp_path: Path) -> list[str]:
    trace = synthetic_trace(300.0, 1.0, lambda r: 3000, lambda r: 150, seed=4)
    return ["simulate", str(PD), "--trace", str(_csv(tmp_path, trace)), "--cold-start", "30"]


def _mix_args(tmp_path: Path) -> list[str]:
    doc: dict[str, Any] = yaml.safe_load(MIXED.read_text())
    doc["spec"]["workload"]["rps"] = {"mean": 3.0, "burstFactor": 1.5}
    doc["spec"]["scaling"]["minReplicas"] = 1
    spec = tmp_path / "mixed.yaml"
    spec.write_text(yaml.safe_dump(doc))
    trace = synthetic_trace(120.0, 4.0, lambda r: 800, lambda r: 150, seed=3)
    return ["simulate", str(spec), "--trace", str(_csv(tmp_path, trace)), "--cold-start", "30"]


# -- prefill/decode: the default replay is the operator's ----------------------------------------


def test_a_pd_spec_replays_its_two_pools_scaled_per_role_by_default(tmp_path: Path) -> None:
    result = runner.invoke(app, [*_pd_args(tmp_path), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["shape"] == "prefill/decode"
    assert data["policy"] == "tokenscale"
    assert data["requests"] == data["served"] > 0
    pools = {p["role"]: p for p in data["pools"]}
    assert set(pools) == {"prefill", "decode"}
    for p in pools.values():
        assert p["gpu_hours"] > 0
        assert 0.0 <= p["slo_attainment"] <= 1.0
        assert p["replicas"][0] == [0.0, p["planned_replicas"]]  # the timeline starts at the plan
        assert p["peak_replicas"] == max(n for _, n in p["replicas"])
    assert sum(p["gpu_hours"] for p in pools.values()) == pytest.approx(data["gpu_hours"])
    assert data["slo_attainment"] <= min(p["slo_attainment"] for p in pools.values()) + 1e-9
    assert "decisions" not in data  # the per-decision record is --timeline's
    table = runner.invoke(app, _pd_args(tmp_path))
    assert table.exit_code == 0, table.output
    assert "prefill" in table.output
    assert "decode" in table.output
    assert "--architectures" in table.output  # the aggregated comparison, named


def test_a_pd_spec_with_timeline_carries_every_decision(tmp_path: Path) -> None:
    result = runner.invoke(app, [*_pd_args(tmp_path), "-o", "json", "--timeline"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["decisions"]
    first = data["decisions"][0]
    assert {"at_s", "prefill", "decode", "prefill_reason", "decode_reason"} <= set(first)


def test_a_pd_spec_explains_both_roles_decisions(tmp_path: Path) -> None:
    result = runner.invoke(app, [*_pd_args(tmp_path), "--explain", "2:00"])
    assert result.exit_code == 0, result.output
    assert "at 2:00" in result.output
    assert "prefill:" in result.output
    assert "decode:" in result.output


def test_a_pd_spec_draws_each_pools_replicas(tmp_path: Path) -> None:
    png = tmp_path / "pd.png"
    result = runner.invoke(app, [*_pd_args(tmp_path), "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--fault", "replica-loss@1:00"], "--fault"),
        (["--policy", "all"], "--policy all"),
        (["--policy", "queue-threshold"], "--policy queue-threshold"),
        (["--queue-target", "4"], "--queue-target"),
        (["--kv-target", "0.5"], "--kv-target"),
    ],
)
def test_a_pd_spec_refuses_what_it_cannot_replay_naming_flag_and_shape(
    tmp_path: Path, extra: list[str], flag: str
) -> None:
    result = runner.invoke(app, [*_pd_args(tmp_path), *extra])
    assert result.exit_code == 2, result.output
    assert flag in result.output
    assert "spec.serving.disaggregation" in result.output
    assert "Traceback" not in result.output


# -- a GPU mix ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--fault", "replica-loss@1:00"], "--fault"),
        (["--explain", "1:00"], "--explain"),
        (["--plot", "PNG"], "--plot"),
        (["--architectures"], "--architectures"),
        (["--policy", "oracle"], "--policy oracle"),
        (["--queue-target", "4"], "--queue-target"),
    ],
)
def test_a_mix_refuses_what_it_cannot_replay_naming_flag_and_shape(
    tmp_path: Path, extra: list[str], flag: str
) -> None:
    extra = [str(tmp_path / "m.png") if x == "PNG" else x for x in extra]
    result = runner.invoke(app, [*_mix_args(tmp_path), *extra])
    assert result.exit_code == 2, result.output
    assert flag in result.output
    assert "spec.hardware.variants" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "m.png").exists()


def test_a_mix_with_timeline_carries_the_autoscaled_timeline(tmp_path: Path) -> None:
    plain = runner.invoke(app, [*_mix_args(tmp_path), "-o", "json"])
    assert plain.exit_code == 0, plain.output
    rows = {d["fleet"]: d for d in json.loads(plain.stdout)}
    assert rows["tokenscale (mix)"]["timeline"] == []
    result = runner.invoke(app, [*_mix_args(tmp_path), "-o", "json", "--timeline"])
    assert result.exit_code == 0, result.output
    rows = {d["fleet"]: d for d in json.loads(result.stdout)}
    assert rows["tokenscale (mix)"]["timeline"]


# -- flags that only --architectures' comparison would ignore -----------------------------------


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--fault", "replica-loss@1:00"], "--fault"),
        (["--explain", "1:00"], "--explain"),
        (["--timeline"], "--timeline"),
    ],
)
def test_architectures_refuses_flags_it_does_not_replay(
    tmp_path: Path, extra: list[str], flag: str
) -> None:
    result = runner.invoke(app, [*_pd_args(tmp_path), "--architectures", *extra])
    assert result.exit_code == 2, result.output
    assert flag in result.output
    assert "--architectures" in result.output


# -- the matrix: every flag on every shape works or exits 2 -------------------------------------

ONE_POOL = ROOT / "operator" / "tokenscale" / "data" / "playground" / "llama-3.1-8b-l4.yaml"
SHAPE_NAMES = {
    "pool": "one pool",
    "mix": "spec.hardware.variants",
    "pd": "spec.serving.disaggregation",
    "length": "spec.serving.lengthClasses",
}
LENGTH = ROOT / "deploy" / "examples" / "length-classes" / "llama-3.1-8b-h100-length.yaml"


def _length_args(tmp_path: Path) -> list[str]:
    trace = synthetic_trace(
        300.0, 2.0, lambda r: 500 if r.random() < 0.8 else 6000, lambda r: 150, seed=4
    )
    return ["simulate", str(LENGTH), "--trace", str(_csv(tmp_path, trace)), "--cold-start", "30"]


def _pool_args(tmp_path: Path) -> list[str]:
    trace = synthetic_trace(300.0, 1.0, lambda r: 800, lambda r: 150, seed=4)
    return ["simulate", str(ONE_POOL), "--trace", str(_csv(tmp_path, trace)), "--cold-start", "30"]


def _json(out: str) -> Any:
    return json.loads(out)


def _rows(out: str) -> list[dict[str, Any]]:
    data = _json(out)
    return data if isinstance(data, list) else [data]


def _autoscaled(out: str) -> list[dict[str, Any]]:
    """A mix's autoscaled rows (the operator's mix policy: ``tokenscale (mix)``, …)."""
    return [r for r in _rows(out) if r["fleet"].startswith("tokenscale")]


#: (shape, flags, None for exit 2, else what the output shows when the flag worked). The PNG
#: is written to tmp_path/x.png.
MATRIX: list[tuple[str, list[str], Any]] = [
    # one pool: every flag, and the pairs a drill cannot honour
    ("pool", ["--fault", "replica-loss@1:00"], lambda o, p: "redundancy" in o),
    ("pool", ["--explain", "2:00"], lambda o, p: "at 2:00" in o),
    ("pool", ["--plot", "PNG"], lambda o, p: p.exists()),
    ("pool", ["--timeline", "-o", "json"], lambda o, p: _rows(o)[0]["timeline"]),
    ("pool", ["--timeline"], None),
    ("pool", ["--architectures"], lambda o, p: "prefill/decode" in o),
    ("pool", ["--policy", "static", "-o", "json"], lambda o, p: _rows(o)[0]["policy"] == "static"),
    ("pool", ["--policy", "all", "-o", "json"], lambda o, p: len(_rows(o)) > 1),
    ("pool", ["-o", "json"], lambda o, p: _rows(o)[0]["policy"] == "tokenscale"),
    ("pool", ["--fault", "replica-loss@1:00", "--explain", "2:00"], None),
    ("pool", ["--fault", "replica-loss@1:00", "--plot", "PNG"], lambda o, p: p.exists()),
    ("pool", ["--explain", "2:00", "--policy", "static"], None),
    # a GPU mix
    ("mix", ["--fault", "replica-loss@1:00"], None),
    ("mix", ["--explain", "1:00"], None),
    ("mix", ["--plot", "PNG"], None),
    ("mix", ["--timeline", "-o", "json"], lambda o, p: any(r["timeline"] for r in _rows(o))),
    ("mix", ["--timeline"], None),
    ("mix", ["--architectures"], None),
    ("mix", ["--policy", "static", "-o", "json"], lambda o, p: not _autoscaled(o)),
    ("mix", ["--policy", "oracle"], None),
    ("mix", ["-o", "json"], lambda o, p: any(r["fleet"] == "tokenscale (mix)" for r in _rows(o))),
    ("mix", ["--timeline", "-o", "json", "--policy", "static"], None),
    ("mix", ["--stockout", "h100-sxm-80gb@1:00", "--policy", "static"], None),
    # prefill/decode pools
    ("pd", ["--fault", "replica-loss@1:00"], None),
    ("pd", ["--explain", "2:00"], lambda o, p: "prefill:" in o and "decode:" in o),
    ("pd", ["--plot", "PNG"], lambda o, p: p.exists()),
    ("pd", ["--timeline", "-o", "json"], lambda o, p: _json(o)["decisions"]),
    ("pd", ["--timeline"], None),
    ("pd", ["--architectures", "-o", "json"], lambda o, p: "prefill" in o and "decode" in o),
    ("pd", ["--policy", "static"], None),
    ("pd", ["-o", "json"], lambda o, p: _json(o)["shape"] == "prefill/decode"),
    # length classes
    ("length", ["--fault", "replica-loss@1:00"], None),
    ("length", ["--explain", "1:00"], None),
    ("length", ["--plot", "PNG"], None),
    ("length", ["--architectures"], None),
    ("length", ["--policy", "oracle"], None),
    ("length", ["--timeline"], None),
    ("length", ["--timeline", "-o", "json"], lambda o, p: _json(o)["isolated"]["timeline"]),
    (
        "length",
        ["--policy", "static", "-o", "json"],
        lambda o, p: [x["name"] for x in _json(o)["isolated"]["pools"]] == ["short", "long"],
    ),
    ("length", ["-o", "json"], lambda o, p: len(_json(o)["classes"]["shared"]) == 2),
    (
        "length",
        ["--policy", "best-static", "-o", "json"],
        lambda o, p: (
            _json(o)["smallest"]["shared_replicas"] >= 1
            and all(c["attainment"] >= 0.99 for c in _json(o)["classes"]["shared"])
        ),
    ),
]


@pytest.mark.parametrize(
    ("shape", "flags", "worked"), MATRIX, ids=[f"{s}:{' '.join(f)}" for s, f, _ in MATRIX]
)
def test_every_flag_on_every_shape_works_or_exits_2_naming_flag_and_shape(
    tmp_path: Path, shape: str, flags: list[str], worked: Any
) -> None:
    png = tmp_path / "x.png"
    args = {"pool": _pool_args, "mix": _mix_args, "pd": _pd_args, "length": _length_args}
    base = args[shape](tmp_path)
    result = runner.invoke(app, [*base, *(str(png) if f == "PNG" else f for f in flags)])
    assert "Traceback" not in result.output
    if worked is None:
        assert result.exit_code == 2, result.output
        assert flags[0] in result.output
        assert SHAPE_NAMES[shape] in result.output, result.output
        assert not png.exists()
        return
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert worked(out, png), out[-2000:]
