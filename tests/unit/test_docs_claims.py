"""Docs say what the code does: claims about which code talks to the Kubernetes API and which
fleet shapes the operator scales, checked against the source."""

import re

from tests.helpers import ROOT

PACKAGE = ROOT / "operator" / "tokenscale"
#: A Kubernetes API client in use: its API classes or its watch (exceptions alone call nothing).
_CLIENT = re.compile(
    r"^\s*(from kubernetes import (client|watch)\b|import kubernetes\b|"
    r"from kubernetes\.client import (?!exceptions))",
    re.MULTILINE,
)


def _layout_entry(package: str) -> str:
    """``docs/layout.md``'s entry for ``package/``: its line and the indented lines after it."""
    lines = (ROOT / "docs" / "layout.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {package}/"))
    entry = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("   "):  # the next package starts at two spaces
            break
        entry.append(line)
    return " ".join(" ".join(entry).split())


def test_layout_names_every_package_that_calls_the_kubernetes_api() -> None:
    callers = {
        path.relative_to(PACKAGE).parts[0]
        for path in PACKAGE.rglob("*.py")
        if _CLIENT.search(path.read_text())
    }
    assert "kube" in callers
    assert "playground" in callers  # the pod runner and the session write directly
    entry = _layout_entry("kube")
    assert "only code" not in entry
    for package in sorted(callers - {"kube"}):
        assert f"{package}/" in entry, (package, entry)


def test_operator_doc_says_the_operator_scales_prefill_decode_pools() -> None:
    reconcile = (PACKAGE / "controller" / "desire.py").read_text()
    assert "decide_roles_for(" in reconcile  # each role decided in the reconcile
    text = " ".join((ROOT / "docs" / "operator.md").read_text().split())
    assert "does not scale the pools" not in text
    assert "controller/roles.py" in text
