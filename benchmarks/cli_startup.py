"""How fast ``tokenscale plan`` starts: the CLI's import time and a whole plan run.

Run: ``python benchmarks/cli_startup.py [--runs N]``. Each sample is a fresh interpreter
(``python -X importtime -c 'import tokenscale.cli.app'``, the cumulative time of the top-level
import), then ``tokenscale plan deploy/examples/llama-3.1-8b-l4.yaml -o json`` end to end
(interpreter start, imports, parse, plan, print). Medians of N runs (target: imports well
under 0.5 s), in wall-clock seconds and in CPU seconds (user + system of the child process,
which other work on a shared machine inflates far less than the wall clock). It also names the
heavy modules the import pulls in, if any.
"""

import argparse
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "deploy/examples/llama-3.1-8b-l4.yaml"
HEAVY = ("aiohttp", "matplotlib", "kubernetes", "kopf", "tokenscale.playground.session")


def import_seconds() -> tuple[float, list[str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import tokenscale.cli.app"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    total = 0.0
    heavy: list[str] = []
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if not m:
            continue
        if m.group(3) in HEAVY:
            heavy.append(m.group(3))
        if m.group(3) == "tokenscale.cli.app":
            total = int(m.group(1)) / 1e6
    return total, heavy


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_seconds(args: list[str]) -> float:
    """User + system CPU seconds of one child process running ``args``."""
    before = _child_cpu()
    subprocess.run(args, cwd=ROOT, capture_output=True, check=True)
    return _child_cpu() - before


def plan_seconds() -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tokenscale", "plan", EXAMPLE, "-o", "json"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    imports, heavy = [], set()
    for _ in range(args.runs):
        seconds, names = import_seconds()
        imports.append(seconds)
        heavy.update(names)
    plans = [plan_seconds() for _ in range(args.runs)]
    import_cpu = [
        cpu_seconds([sys.executable, "-c", "import tokenscale.cli.app"]) for _ in range(args.runs)
    ]
    bare_cpu = [cpu_seconds([sys.executable, "-c", "pass"]) for _ in range(args.runs)]
    plan_cpu = [
        cpu_seconds([sys.executable, "-m", "tokenscale", "plan", EXAMPLE, "-o", "json"])
        for _ in range(args.runs)
    ]
    runs = f"{args.runs} runs"
    print(f"import tokenscale.cli.app: median {statistics.median(imports):.3f} s wall ({runs})")
    print(
        f"  CPU: {statistics.median(import_cpu):.3f} s for python -c 'import tokenscale.cli.app' "
        f"({statistics.median(bare_cpu):.3f} s for a bare interpreter)"
    )
    print(
        f"tokenscale plan {EXAMPLE} -o json: median {statistics.median(plans):.3f} s wall, "
        f"{statistics.median(plan_cpu):.3f} s CPU"
    )
    print("heavy modules imported: " + (", ".join(sorted(heavy)) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
