"""The PrometheusRule the chart renders with ``prometheusRules.enabled`` (the real helm)."""

import subprocess
from typing import Any

import yaml

from tests.helpers import ROOT


def render_prometheus_rule(for_: str = "5m", rate_window: str = "5m") -> dict[str, Any]:
    """``helm template`` the chart with the rules on; the PrometheusRule document."""
    script = str(ROOT / "scripts" / "helm-bin.sh")
    out = subprocess.run(["bash", script], check=True, capture_output=True, text=True)
    helm = out.stdout.strip().splitlines()[-1]
    rendered = subprocess.run(
        [
            helm,
            "template",
            "ts",
            str(ROOT / "charts" / "tokenscale"),
            "--set",
            "prometheusRules.enabled=true",
            "--set",
            f"prometheusRules.for={for_}",
            "--set",
            f"prometheusRules.rateWindow={rate_window}",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return next(d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "PrometheusRule")


def rule_file_text(rule: dict[str, Any]) -> str:
    """The PrometheusRule's groups as a Prometheus rule file."""
    return yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False)
