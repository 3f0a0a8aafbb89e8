"""Issue 33: flags that mislead and numbers that are not what they look like, each reproduced
through the CLI a user runs (`tokenscale plan`, `check`) or the planner it calls."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import manifest
from tokenscale.cli.app import app

runner = CliRunner()


def _write(tmp_path: Path, doc: dict[str, Any] | str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def _plan_json(path: Path, *extra: str) -> dict[str, Any]:
    result = runner.invoke(app, ["plan", str(path), "-o", "json", *extra])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    return data


# --- YAML reads unquoted on/off as booleans -------------------------------------------------


@pytest.mark.parametrize(("word", "mode"), [("on", "on"), ("off", "off"), ("On", "on")])
def test_unquoted_on_off_disaggregation_is_accepted(tmp_path: Path, word: str, mode: str) -> None:
    text = yaml.safe_dump(manifest(serving={})).replace("serving: {}", f"serving:\n    disaggregation: {word}")
    assert f"disaggregation: {word}" in text
    assert yaml.safe_load(text)["spec"]["serving"]["disaggregation"] in (True, False)
    data = _plan_json(_write(tmp_path, text))
    pd = data["disaggregation"]
    assert (pd["mode"] if pd is not None else "off") == mode
