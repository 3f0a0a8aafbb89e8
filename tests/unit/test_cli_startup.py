"""Each command imports what it uses, when it runs: ``tokenscale plan`` loads no simulator,
playground, operator, renderer, scaling engine or client stack; ``--help`` and ``--version`` load
not even the models, YAML or rich. A structural test (what is in ``sys.modules`` after a real
run in a fresh interpreter); the time itself is measured by benchmarks/cli_startup.py."""

import subprocess
import sys

import pytest

from tests.helpers import ROOT

#: Never needed to plan a spec from a file.
NOT_FOR_PLAN = (
    "aiohttp",
    "matplotlib",
    "kubernetes",
    "kopf",
    "scipy",
    "tokenscale.playground",
    "tokenscale.simulation",
    "tokenscale.controller",
    "tokenscale.kube",
    "tokenscale.metrics",
    "tokenscale.bench",
    # the decision engine; scaling/schedule_day.py (a day of schedule windows, costed) is the
    # planner's, and the package's __init__ loads nothing until a name is used
    "tokenscale.scaling.engine",
    "tokenscale.scaling.stepper",
    "tokenscale.scaling.decision",
    "tokenscale.render.bundle",
    "tokenscale.api.crd",
    "tokenscale.api.status",
)
#: Not needed to print the help or the version either.
NOT_FOR_HELP = (*NOT_FOR_PLAN, "pydantic", "yaml", "rich", "tokenscale.api", "tokenscale.planning")


def _loaded_after(argv: list[str], watch: tuple[str, ...]) -> set[str]:
    """The modules of ``watch`` (or their submodules) loaded by ``tokenscale ARGV``."""
    probe = (
        "import sys\n"
        f"sys.argv = ['tokenscale', *{argv!r}]\n"
        "from tokenscale.cli.app import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    assert exit.code in (0, None), exit.code\n"
        f"watch = {watch!r}\n"
        "print(' '.join(w for w in watch if any(m == w or m.startswith(w + '.') "
        "for m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split("\n")[-2].split())


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "deploy/examples/llama-3.1-8b-l4.yaml"],
        ["plan", "deploy/examples/llama-3.1-8b-l4.yaml", "-o", "json"],
        ["plan", "deploy/examples/llama-3.1-8b-l4.yaml", "--sweep", "--gpu", "L4-24GB"],
    ],
    ids=["table", "json", "sweep"],
)
def test_a_plan_loads_only_the_planner(argv: list[str]) -> None:
    assert _loaded_after(argv, NOT_FOR_PLAN) == set()


@pytest.mark.parametrize("argv", [["--help"], ["--version"]])
def test_help_and_version_load_no_models_no_yaml_no_rich(argv: list[str]) -> None:
    assert _loaded_after(argv, NOT_FOR_HELP) == set()


def test_the_probe_sees_what_a_command_loads() -> None:
    """The probe can fail: ``catalog`` uses the models and rich, ``render`` the renderers."""
    assert {"pydantic", "rich"} <= _loaded_after(["catalog"], NOT_FOR_HELP)
    loaded = _loaded_after(["render", "deploy/examples/llama-3.1-8b-l4.yaml"], NOT_FOR_PLAN)
    assert {"tokenscale.render.bundle", "tokenscale.scaling.decision"} <= loaded


def test_the_operator_loads_no_scipy_numpy_or_matplotlib() -> None:
    """What ``tokenscale run`` imports (the reconcile and decision paths) keeps the operator's
    resident set free of SciPy (27 MB), NumPy (16 MB) and matplotlib until a service needs them
    (adapters or a GPU mix: SciPy and NumPy; prompts with a stated P99: NumPy, for the prefill
    queue's wait tail) and is planned (docs/scale-out.md)."""
    probe = (
        "import sys\n"
        "import tokenscale.cli.app\n"
        "from tokenscale.controller.leader import run_operator\n"
        "import tokenscale.controller.handlers, tokenscale.controller.resync\n"
        "import tokenscale.controller.reconcile, tokenscale.scaling.stepper\n"
        "heavy = ('scipy', 'numpy', 'matplotlib')\n"
        "print(' '.join(h for h in heavy if h in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
