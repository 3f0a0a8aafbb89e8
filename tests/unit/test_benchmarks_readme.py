"""Every benchmark command the README and the docs pages document exists and starts as written.

``python benchmarks/X.py`` puts ``benchmarks/`` first on ``sys.path``, so a script there named
like a standard-library module (``operator.py`` once) breaks every other script. The light
benchmarks run to completion here; the heavy ones (a real API server, Prometheus, a long
replay) must at least parse ``--help``.
"""

import os
import re
import subprocess
import sys

import pytest

from tests.helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS = "\n".join(page.read_text() for page in PAGES)
COMMANDS = sorted(set(re.findall(r"python (benchmarks/[\w/]+\.py)", DOCS)))
LIGHT = {"benchmarks/planner.py": ("--quick",), "benchmarks/accuracy.py": ()}
"""Run to completion; the planner's timings as a smoke run (its medians over 3 runs, not 500:
the same plans; ``-m slow`` runs it exactly as documented)."""
WITH_HELP = {"benchmarks/operator_load.py", "benchmarks/scaling.py", "benchmarks/autoscaling.py"}


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "operator")}
    return subprocess.run(
        [sys.executable, script, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        # planner.py takes ~35 s on a quiet 2-core machine, over 120 s on a saturated one
        timeout=600,
        check=False,
    )


def test_the_readme_names_benchmarks() -> None:
    assert set(COMMANDS) >= set(LIGHT)


@pytest.mark.parametrize("script", COMMANDS)
def test_every_documented_benchmark_exists(script: str) -> None:
    assert (ROOT / script).is_file(), f"the docs name {script}, which does not exist"


def test_no_benchmark_shadows_a_standard_library_module() -> None:
    names = {p.stem for p in (ROOT / "benchmarks").glob("*.py")} - {"__init__"}
    assert not names & set(sys.stdlib_module_names)


@pytest.mark.parametrize("script", sorted(LIGHT))
def test_light_benchmarks_run_as_written(script: str) -> None:
    result = _run(script, *LIGHT[script])
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(s for s, args in LIGHT.items() if args))
def test_light_benchmarks_run_exactly_as_documented(script: str) -> None:
    result = _run(script)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("script", sorted(WITH_HELP))
def test_heavy_benchmarks_start(script: str) -> None:
    assert script in COMMANDS
    result = _run(script, "--help")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout
