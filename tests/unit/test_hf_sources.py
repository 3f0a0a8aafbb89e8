"""A model's config.json from a file (`hfConfigFile`), from the Hugging Face Hub's local cache
(`huggingface_hub`, offline: no network here), or refused with the alternatives named."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml
from typer.testing import CliRunner

from tests.helpers import HF_CONFIGS, ROOT, manifest
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_manifests
from tokenscale.cli.app import app
from tokenscale.cli.bench_compare import load_plan
from tokenscale.cli.model_source import ALTERNATIVES, hub_config, inline_model_source
from tokenscale.planning import plan_service

runner = CliRunner()
QWEN = HF_CONFIGS / "Qwen2.5-7B-Instruct.json"


def _write(tmp_path: Path, model: dict[str, object], name: str = "svc.yaml") -> Path:
    f = tmp_path / name
    f.write_text(yaml.safe_dump(manifest(model=model)))
    return f


def _json(args: list[str]) -> dict[str, object]:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert isinstance(data, dict)
    return data


def test_hf_config_file_plans_like_the_inline_config(tmp_path: Path) -> None:
    shutil.copy(QWEN, tmp_path / "config.json")
    by_file = _write(
        tmp_path,
        {"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": None, "hfConfigFile": "config.json"},
    )
    inline = _write(
        tmp_path,
        {
            "name": "Qwen/Qwen2.5-7B-Instruct",
            "catalog": None,
            "hfConfig": json.loads(QWEN.read_text()),
        },
        "inline.yaml",
    )
    a, b = _json(["plan", str(by_file), "-o", "json"]), _json(["plan", str(inline), "-o", "json"])
    for key in ("params", "kv_bytes_per_token", "replicas", "tpot_estimate_s", "max_model_len"):
        assert a[key] == b[key], key


def test_a_relative_file_is_read_from_the_manifest_directory(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    shutil.copy(QWEN, tmp_path / "models" / "qwen.json")
    f = _write(tmp_path, {"name": "q", "catalog": None, "hfConfigFile": "models/qwen.json"})
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tokenscale", "plan", str(f), "-o", "json"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["params"] == pytest.approx(7.6e9, rel=0.01)


@pytest.mark.parametrize(
    ("content", "words"),
    [(None, "cannot read"), ("{not json", "is not JSON"), ("[1, 2]", "not a JSON object")],
)
def test_a_bad_file_names_the_field_and_the_alternatives(
    tmp_path: Path, content: str | None, words: str
) -> None:
    if content is not None:
        (tmp_path / "config.json").write_text(content)
    f = _write(tmp_path, {"name": "q", "catalog": None, "hfConfigFile": "config.json"})
    result = runner.invoke(app, ["plan", str(f), "-o", "json"])
    assert result.exit_code == 2
    (issue,) = json.loads(result.stdout)["issues"]
    assert issue["path"] == "spec.model.hfConfigFile"
    assert words in issue["message"]


def test_two_sources_are_refused_by_the_schema(tmp_path: Path) -> None:
    f = _write(tmp_path, {"name": "q", "catalog": "qwen2.5-7b", "hfConfigFile": "config.json"})
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2
    assert "catalog, hfConfigFile" in result.stderr


def test_a_config_map_ref_is_the_operators_not_the_cli(tmp_path: Path) -> None:
    f = _write(tmp_path, {"name": "q", "catalog": None, "hfConfigRef": {"configMapName": "qwen"}})
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2
    assert "spec.model.hfConfigRef" in result.stderr
    assert "hfConfigFile" in result.stderr


def test_the_planner_refuses_a_file_it_was_not_given(tmp_path: Path) -> None:
    (svc,) = parse_manifests(
        yaml.safe_dump(manifest(model={"name": "q", "catalog": None, "hfConfigFile": "c.json"}))
    )
    with pytest.raises(SpecError, match="hfConfigRef"):
        plan_service(svc.spec)


def test_an_unknown_name_offline_names_the_three_alternatives(tmp_path: Path) -> None:
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # tests/conftest.py: never the network
    f = _write(tmp_path, {"name": "acme/never-cached-7b", "catalog": None})
    result = runner.invoke(app, ["plan", str(f), "-o", "json"])
    assert result.exit_code == 2
    (issue,) = json.loads(result.stdout)["issues"]
    assert issue["path"] == "spec.model.name"
    assert "not in the local Hugging Face cache" in issue["message"]
    for alternative in ("hfConfigFile", "hfConfig", "spec.model.catalog"):
        assert alternative in issue["message"]
    assert ALTERNATIVES in issue["message"]


def _hf_cache(root: Path, repo_id: str, config: Path) -> Path:
    """A Hugging Face hub cache holding one file, laid out as huggingface_hub lays it out
    (models--org--name/refs/main → snapshots/<commit>/config.json)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = root / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    shutil.copy(config, snapshot / "config.json")
    return root


def test_a_cached_config_is_read_without_the_network(tmp_path: Path) -> None:
    cache = _hf_cache(tmp_path / "hub", "acme/qwen-copy", QWEN)
    assert hub_config("acme/qwen-copy", cache) == json.loads(QWEN.read_text())
    (svc,) = parse_manifests(
        yaml.safe_dump(manifest(model={"name": "acme/qwen-copy", "catalog": None}))
    )
    inlined = inline_model_source(svc, None, cache)
    assert inlined.spec.model.hf_config == json.loads(QWEN.read_text())
    assert plan_service(inlined.spec).params == pytest.approx(7.6e9, rel=0.01)


def test_the_cli_reads_the_hub_cache_named_by_the_environment(tmp_path: Path) -> None:
    cache = _hf_cache(tmp_path / "hub", "acme/qwen-copy", QWEN)
    f = _write(tmp_path, {"name": "acme/qwen-copy", "catalog": None})
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "tokenscale", "plan", str(f), "-o", "json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["model_source"] == "spec.model.hfConfig"


def test_a_catalog_name_never_asks_the_hub(tmp_path: Path) -> None:
    (svc,) = parse_manifests(
        yaml.safe_dump(manifest(model={"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": None}))
    )
    assert inline_model_source(svc, None, tmp_path / "empty") is svc


def test_simulate_and_check_read_the_file_as_plan_does(tmp_path: Path) -> None:
    """Before: both said "'config.json' is a file only the command line reads" (exit 2)."""
    shutil.copy(QWEN, tmp_path / "config.json")
    by_file = _write(
        tmp_path,
        {"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": None, "hfConfigFile": "config.json"},
    )
    trace = tmp_path / "t.csv"
    trace.write_text("t,in,out\n" + "".join(f"{k},500,50\n" for k in range(20)))
    columns = ["--columns", "arrival=t,input=in,output=out"]
    simulated = _json(["simulate", str(by_file), "--trace", str(trace), *columns, "-o", "json"])
    assert simulated["requests"] == 20
    checked = runner.invoke(app, ["check", str(by_file), "-o", "json"])
    assert "only the command line reads" not in checked.output
    assert checked.exit_code in (0, 1), checked.output
    missing = _write(
        tmp_path,
        {"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": None, "hfConfigFile": "nope.json"},
        "missing.yaml",
    )
    for command in (
        ["simulate", str(missing), "--trace", str(trace), *columns],
        ["check", str(missing)],
    ):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert "spec.model.hfConfigFile: cannot read" in result.output


def test_bench_plan_reads_the_file_as_plan_does(tmp_path: Path) -> None:
    """``bench --plan FILE`` (checked before any request is sent) inlines hfConfigFile."""
    shutil.copy(QWEN, tmp_path / "config.json")
    by_file = _write(
        tmp_path,
        {"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": None, "hfConfigFile": "config.json"},
    )
    put = load_plan(by_file)
    assert put.spec.model.hf_config is not None
    assert put.plan.params == _json(["plan", str(by_file), "-o", "json"])["params"]
    missing = _write(
        tmp_path,
        {"name": "Qwen/Qwen2.5-7B-Instruct", "catalog": None, "hfConfigFile": "nope.json"},
        "missing.yaml",
    )
    with pytest.raises(typer.Exit) as info:
        load_plan(missing)
    assert info.value.exit_code == 2
