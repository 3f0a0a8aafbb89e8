"""`tokenscale plan` does not load what only other commands need (aiohttp, matplotlib, the
Kubernetes client, the playground): their imports cost a second of start-up. The time itself is
measured by benchmarks/cli_startup.py, not here."""

import subprocess
import sys

from tests.helpers import ROOT

HEAVY = (
    "aiohttp",
    "matplotlib",
    "kubernetes",
    "kopf",
    "tokenscale.playground.session",
    "tokenscale.simulation",
    "tokenscale.api.crd",
)


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def test_the_cli_module_imports_nothing_heavy() -> None:
    assert _loaded_after("import tokenscale.cli.app") == set()


def test_a_plan_run_imports_nothing_heavy() -> None:
    code = (
        "from typer.testing import CliRunner\n"
        "from tokenscale.cli.app import app\n"
        "args = ['plan', 'deploy/examples/llama-3.1-8b-l4.yaml', '-o', 'json']\n"
        "r = CliRunner().invoke(app, args)\n"
        "assert r.exit_code == 0, r.output"
    )
    assert _loaded_after(code) == set()


def test_the_probe_sees_a_heavy_import() -> None:
    assert "aiohttp" in _loaded_after("import aiohttp")
