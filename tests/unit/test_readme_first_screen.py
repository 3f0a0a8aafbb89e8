"""The README's first screen shows the path on a GPU cluster: ``helm install``, ``kubectl apply``
and what ``kubectl get infsvc`` then prints. The printed columns are the CRD's printer columns,
and the row is the example's plan as the operator writes it into the status."""

import re

import yaml

from tests.helpers import ROOT
from tokenscale.api.manifest import parse_manifests
from tokenscale.controller.status import plan_summary, ttft_display
from tokenscale.planning import plan_service

README = (ROOT / "README.md").read_text()
CRD = yaml.safe_load((ROOT / "crds" / "inferenceservices.tokenscale.io.yaml").read_text())
EXAMPLE = ROOT / "deploy" / "examples" / "llama-3.1-8b-l4.yaml"


def _get_output() -> list[str]:
    """The ```text block that follows the ``kubectl get infsvc`` command."""
    after = README.split("kubectl get infsvc", 1)[1]
    block = re.search(r"```text\n(.*?)```", after, re.DOTALL)
    assert block is not None
    return block.group(1).splitlines()


def test_the_first_screen_shows_install_apply_and_get() -> None:
    first = README[: README.index("## What the autoscaler was measured to do")]
    assert "helm install tokenscale charts/tokenscale" in first
    assert "kubectl apply -f deploy/examples/llama-3.1-8b-l4.yaml" in first
    assert "kubectl get infsvc" in first
    assert "(docs/install.md)" in first
    assert "## Three commands" in first  # still there, before it


def test_the_columns_are_the_crds_printer_columns() -> None:
    (version,) = CRD["spec"]["versions"]
    names = [c["name"].upper() for c in version["additionalPrinterColumns"]]
    header = _get_output()[0].split()
    assert header == ["NAME", *names]


def test_the_row_is_the_examples_plan_as_the_status_carries_it() -> None:
    header, row = _get_output()
    starts = [header.index(h) for h in header.split()]
    ends = [*starts[1:], None]
    cells = {h: row[a:b].strip() for h, a, b in zip(header.split(), starts, ends, strict=True)}
    service = parse_manifests(EXAMPLE.read_text())[0]
    plan = plan_service(service.spec, service.metadata.name)
    slo = service.spec.slo
    summary = plan_summary(plan, slo.ttft_p99_seconds, slo.tpot_p99_seconds)
    assert plan.replicas is not None
    assert cells["NAME"] == service.metadata.name
    assert cells["MODEL"] == service.spec.model.name
    assert cells["GPU"] == service.spec.hardware.gpu
    assert cells["TP"] == str(plan.tensor_parallel_size)
    assert cells["DESIRED"] == str(plan.replicas.total)
    assert cells["BINDING"] == plan.binding_constraint
    assert cells["TTFT-P99"] == ttft_display(None, summary)
    assert cells["PREFILL"] == cells["DECODE"] == cells["KV"] == ""  # one pool, no metrics yet
