"""The fleet's shape (one pool, a GPU mix, prefill/decode pools, length classes) is tested in
one place each: ``Plan.is_mix``, ``Plan.role_pools`` / ``Plan.is_disaggregated``,
``Plan.length_split`` and, before planning, ``HardwareSpec.is_mix``, ``Serving.asks_for_roles``
and ``Serving.splits_by_length``. Everything else asks them."""

import re
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service
from tokenscale.planning.result import Plan

ONE_POOL = ROOT / "deploy" / "examples" / "llama-3.1-8b-l4.yaml"
MIX = ROOT / "deploy" / "examples" / "variants" / "llama-3.1-8b-h100-l40s.yaml"
PD = ROOT / "tests" / "fixtures" / "disaggregated" / "llama-3.1-8b-h100-pd.yaml"
LENGTH = ROOT / "deploy" / "examples" / "length-classes" / "llama-3.1-8b-h100-length.yaml"
PACKAGE = ROOT / "operator" / "tokenscale"

#: "Is it a mix / P/D?" decided from the raw fields instead of asking the predicates.
RAW_SHAPE_TEST = re.compile(
    r"\.mix is (not )?None|disaggregation is (not )?None|\bd\.enabled\b|disaggregation\.enabled"
    r"|variants is (not )?None|bool\(self\.roles\)"
    r'|disaggregation [!=]= "off"'
    r"|if (not )?(?![\w.]*status\.)[\w.]*\.length_classes( and| or|:)"  # status: what ran
    r"|length_classes is (not )?None"
)
#: Where the raw fields may still be read: the predicates themselves, the spec's validator,
#: code that reads a mix's own data after narrowing it (routing, primary, the variants list),
#: and the views of the P/D evaluation (shown for ``auto`` whether or not it was chosen).
ALLOWED = {
    "planning/result.py": "the predicates",
    "api/hardware.py": "the predicate and the validator",
    "api/serving.py": "the spec's P/D and length predicates (asks_for_roles, splits_by_length)",
    "planning/mix.py": "the mix planner narrows its own summary",
    "scaling/variant_order.py": "reads the mix's routing and primary",
    "render/variants.py": "reads spec.hardware.variants",
    "simulation/mix.py": "reads spec.hardware.variants",
    "cli/mix_view.py": "narrows the mix it was given",
    "cli/plan_view.py": "the P/D evaluation, enabled or not",
    "cli/plan_formats.py": "the P/D evaluation, enabled or not",
}


def _plan(path: Path) -> Plan:
    s = parse_manifests(path.read_text())[0]
    return plan_service(s.spec, s.metadata.name)


@pytest.mark.parametrize(
    ("path", "mix", "roles"),
    [(ONE_POOL, False, None), (MIX, True, None), (PD, False, ("prefill", "decode"))],
)
def test_each_shape_answers_its_predicates(
    path: Path, mix: bool, roles: tuple[str, ...] | None
) -> None:
    p = _plan(path)
    s = parse_manifests(path.read_text())[0].spec
    assert p.is_mix is mix
    assert s.hardware.is_mix is mix
    assert p.is_disaggregated is (roles is not None)
    pair = p.role_pools
    assert (None if pair is None else tuple(x.role for x in pair)) == roles
    rule = p.coordination.rule if p.coordination is not None else None
    assert rule == ("mix" if mix else "disaggregated" if roles else "none")


def test_length_classes_answer_their_predicates() -> None:
    p = _plan(LENGTH)
    s = parse_manifests(LENGTH.read_text())[0].spec
    assert s.serving.splits_by_length
    assert p.length_split is not None
    assert not p.is_mix
    assert not p.is_disaggregated
    assert p.coordination is not None
    assert p.coordination.rule == "lengthClasses"
    assert _plan(ONE_POOL).length_split is None


def test_auto_that_does_not_split_is_one_pool_with_its_evaluation_kept() -> None:
    doc = yaml.safe_load(PD.read_text())
    assert doc["spec"]["serving"]["disaggregation"] == "auto"
    doc["spec"]["workload"]["inputTokens"] = {"mean": 200, "p99": 400}
    s = parse_manifests(yaml.safe_dump(doc))[0]
    p = plan_service(s.spec, s.metadata.name)
    assert p.disaggregation is not None  # evaluated, and shown
    assert p.disaggregation.mode == "auto"
    assert not p.disaggregation.enabled  # short prompts: one pool is cheaper
    assert p.disaggregation.prefill is not None  # the evaluation keeps both pools
    assert not p.is_disaggregated
    assert p.role_pools is None
    assert p.coordination is not None
    assert p.coordination.rule == "none"


def test_no_module_tests_the_shape_from_the_raw_fields() -> None:
    found = {
        f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in ALLOWED
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if RAW_SHAPE_TEST.search(line) and not line.lstrip().startswith("#") and "``" not in line
    }
    assert not found, "ask Plan.is_mix / Plan.role_pools / HardwareSpec.is_mix instead:\n" + (
        "\n".join(sorted(found))
    )
