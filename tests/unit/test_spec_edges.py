"""Smaller hardening cases: messages about whole objects, a pin above maxReplicas, exit codes,
and no MetricsAvailable=True without a decision."""

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.helpers import manifest
from tests.unit.test_status_transitions import SNAP, FakeKube, _body, _condition, _metrics
from tokenscale.api.errors import SpecError
from tokenscale.api.manifest import parse_inference_service
from tokenscale.cli.app import app

INFEASIBLE = {
    "model": {"name": "meta-llama/Llama-3.1-405B", "catalog": "llama-3.1-405b"},
    "hardware": {"gpu": "L4-24GB", "tensorParallelSize": 1},
}


def _error(**spec: object) -> str:
    with pytest.raises(SpecError) as exc:
        parse_inference_service(manifest(**spec))
    return str(exc.value)


def test_a_rule_across_fields_does_not_end_in_the_type_of_the_object() -> None:
    message = _error(scaling={"minReplicas": 5, "maxReplicas": 2})
    assert "minReplicas=5 exceeds maxReplicas=2" in message
    assert "(got dict)" not in message
    assert "got" not in message


def test_a_mapping_where_a_value_belongs_names_its_keys() -> None:
    message = _error(scaling={"maxReplicas": {"a": 1, "b": 2}})
    assert "spec.scaling.maxReplicas" in message
    assert "(got a mapping with keys a, b)" in message
    assert "(got a list of 2 items)" in _error(scaling={"maxReplicas": [1, 2]})


def test_a_pin_above_max_replicas_is_refused_with_the_fix() -> None:
    message = _error(scaling={"replicas": 10, "maxReplicas": 4})
    assert "spec.scaling" in message
    assert "replicas=10 exceeds maxReplicas=4" in message
    assert "raise maxReplicas" in message
    parse_inference_service(manifest(scaling={"replicas": 4, "maxReplicas": 4}))  # at the bound


def test_plan_and_playground_agree_on_an_infeasible_spec(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(manifest(**INFEASIBLE)))
    plan = CliRunner().invoke(app, ["plan", str(path)])
    playground = CliRunner().invoke(app, ["playground", "--spec", str(path)])
    assert plan.exit_code == 1, plan.output
    assert playground.exit_code == 1, playground.output
    assert "infeasible" in playground.output
    assert "Traceback" not in playground.output


def test_no_metrics_available_while_the_spec_cannot_be_served() -> None:
    kube = FakeKube(_body())
    kube.run(_metrics(SNAP))
    assert _condition(kube.body, "MetricsAvailable")["status"] == "True"
    kube.body["spec"]["model"] = INFEASIBLE["model"]
    kube.body["spec"]["hardware"] = INFEASIBLE["hardware"]
    kube.run(_metrics(SNAP))
    assert _condition(kube.body, "PlanFeasible")["status"] == "False"
    assert "decision" not in kube.body["status"]
    metrics = _condition(kube.body, "MetricsAvailable")
    assert (metrics["status"], metrics["reason"]) == ("Unknown", "NotEvaluated")
