"""Planner speed: median time of one plan and of a full sweep (targets < 1 ms and < 1 s).

Run: ``python benchmarks/planner.py``. Medians over repeated runs in one process; this
machine is noisy, so compare ratios measured in one run rather than absolute numbers.
``--quick`` takes every median over 3 runs instead (the test suite's smoke run: the same
plans, figures too noisy to report).
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

from tokenscale.api.manifest import parse_manifests
from tokenscale.catalog import GPU_CATALOG
from tokenscale.planning import plan_service, sweep

EXAMPLE = Path(__file__).resolve().parents[1] / "deploy/examples/llama-3.1-70b-h100-bf16-tp4.yaml"
BIG = Path(__file__).resolve().parents[1] / "deploy/examples/llama-3.1-405b-h100-bf16.yaml"
MOE = Path(__file__).resolve().parents[1] / "deploy/examples/kimi-k2-h200.yaml"
MIX = Path(__file__).resolve().parents[1] / "deploy/examples/variants/llama-3.1-8b-h100-l40s.yaml"


QUICK_REPEAT = 3
_quick = False


def _median_seconds(fn: object, repeat: int) -> float:
    samples = []
    for _ in range(QUICK_REPEAT if _quick else repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    global _quick  # noqa: PLW0603 - one flag read by every measurement
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="medians over 3 runs (smoke run)")
    _quick = parser.parse_args().quick
    service = parse_manifests(EXAMPLE.read_text())[0]
    fixed = service.spec
    auto = fixed.model_copy(
        update={"hardware": fixed.hardware.model_copy(update={"tensor_parallel_size": "auto"})}
    )
    one = _median_seconds(lambda: plan_service(fixed), 500)
    four = _median_seconds(lambda: plan_service(auto), 200)
    full = _median_seconds(lambda: sweep(fixed), 9)
    big = parse_manifests(BIG.read_text())[0].spec
    moe = parse_manifests(MOE.read_text())[0].spec
    multi = _median_seconds(lambda: plan_service(big), 50)
    multi_moe = _median_seconds(lambda: plan_service(moe), 20)
    mix = parse_manifests(MIX.read_text())[0].spec
    variants = mix.hardware.variants or []
    a100 = variants[0].model_copy(
        update={"gpu": "A100-SXM-80GB", "tensor_parallel_size": "auto", "max_replicas": 4,
                "gpu_hour_price": 1.8, "preference": 0}
    )  # fmt: skip
    mix_auto = mix.model_copy(
        update={"hardware": mix.hardware.model_copy(update={"variants": [*variants, a100]})}
    )
    pinned_mix = _median_seconds(lambda: plan_service(mix), 20)
    auto_mix = _median_seconds(lambda: plan_service(mix_auto), 10)
    combos = len(GPU_CATALOG) * 4 * 4
    print(f"one plan (fixed TP)          median {one * 1e3:8.3f} ms   target < 1 ms")
    print(f"one plan (TP auto, 4 sizes)  median {four * 1e3:8.3f} ms")
    print(f"sweep {combos} combinations     median {full:8.3f} s    target < 1 s")
    print(f"405B BF16 H100, auto layouts median {multi * 1e3:8.3f} ms   (4 TPs + 2 TP×PP)")
    print(f"Kimi-K2 H200, auto layouts   median {multi_moe * 1e3:8.3f} ms   (4 TPs + PP + EP)")
    print(f"mix, H100 + L40S pinned      median {pinned_mix * 1e3:8.3f} ms")
    print(
        f"mix, + A100 TP auto          median {auto_mix * 1e3:8.3f} ms   (A100 at 4 TPs in the mix)"
    )
    print(f"ratio auto/fixed {four / one:.2f}; sweep per combination {full / combos * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
