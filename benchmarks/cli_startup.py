"""How fast the CLI starts: ``tokenscale plan``, ``--help`` and ``--version`` over the
interpreter's own start.

Run: ``python benchmarks/cli_startup.py [--runs N]``. Each sample is a fresh interpreter running
the console script's entry point (``tokenscale.cli.app:main``) end to end: imports, parse, plan
and print for ``plan deploy/examples/llama-3.1-8b-l4.yaml`` at its defaults (the table); the
bare interpreter (``python -c pass``) is measured the same way and subtracted. Bytecode is
cached first, in a temporary folder (``PYTHONPYCACHEPREFIX``), as an installed package has it.
Medians of N runs, in wall-clock seconds (what a user waits) and CPU seconds (user + system of
the child, which other work on a shared machine inflates far less than the wall clock), against
the targets: plan under 0.3 s, ``--help`` and ``--version`` under 0.15 s.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "deploy/examples/llama-3.1-8b-l4.yaml"
ENTRY = "from tokenscale.cli.app import main; main()"
#: (what, the CLI's arguments, target seconds over the bare interpreter)
CASES = (
    (f"tokenscale plan {EXAMPLE}", ["plan", EXAMPLE], 0.3),
    ("tokenscale --help", ["--help"], 0.15),
    ("tokenscale --version", ["--version"], 0.15),
)


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sample(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh interpreter running ``argv``."""
    cpu = _child_cpu()
    start = time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, check=True)
    return time.perf_counter() - start, _child_cpu() - cpu


def medians(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    samples = [sample(argv, env) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT / "operator"), os.environ.get("PYTHONPATH")) if p
        )
        for _, cli_args, _ in CASES:  # writes the bytecode
            subprocess.run(
                [sys.executable, "-c", ENTRY, *cli_args],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
            )
        bare_wall, bare_cpu = medians([sys.executable, "-c", "pass"], env, args.runs)
        print(
            f"bare interpreter: {bare_wall:.3f} s wall, {bare_cpu:.3f} s CPU "
            f"(medians of {args.runs} runs; the figures below are over it)"
        )
        met = True
        for what, cli_args, target in CASES:
            wall, cpu = medians([sys.executable, "-c", ENTRY, *cli_args], env, args.runs)
            over_wall, over_cpu = wall - bare_wall, cpu - bare_cpu
            ok = over_wall < target
            met &= ok
            print(
                f"{what}: {over_wall:.3f} s wall, {over_cpu:.3f} s CPU over the interpreter "
                f"(target < {target:g} s: {'met' if ok else 'NOT met'} on the wall clock)"
            )
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} CPUs during the run")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
