"""Compare the planner's estimates with published vLLM measurements; print the errors.

Run: ``python benchmarks/accuracy.py``. Each case rebuilds the measured setup as a spec
(same model, GPU, fixed input/output lengths, batch forced to the measured concurrency via
``maxNumSeqs``) and reads the plan's TPOT / TTFT. Closed-loop throughput at concurrency C is
``C × out / (TTFT + out × TPOT)``.
"""

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers import spec  # noqa: E402  (Llama-3.1-8B, the measured model)
from tokenscale.planning import Plan, plan_service  # noqa: E402

MUSGRAVE = (
    "johnmusgrave.com/p/vllm-throughput-latency-sweep-on — vLLM 0.23.0, A100 40GB, "
    "Llama-3.1-8B-Instruct BF16, 1024 in / 128 out, ignore-eos"
)
INFERENCEBENCH = (
    "yobitelcomm.github.io/bench/recipes/concurrency-sweep — vLLM 0.21.0, "
    "H100-80GB-HBM3, Llama-3.1-8B-Instruct fp16, chatbot-short"
)


@dataclass(frozen=True)
class Case:
    name: str
    gpu: str
    concurrency: int
    input_tokens: int
    output_tokens: int
    measured: float
    unit: str
    source: str


CASES = [
    Case("TPOT at C=1 (75 tok/s decode)", "A100-SXM-40GB", 1, 1024, 128, 1000 / 75, "ms", MUSGRAVE),
    Case("throughput gain C=1 → C=8", "A100-SXM-40GB", 8, 1024, 128, 6.6, "×", MUSGRAVE),
    Case("TPOT p50 at C=1", "H100-SXM-80GB", 1, 256, 256, 6.48, "ms", INFERENCEBENCH),
]


def _plan(gpu: str, concurrency: int, inp: int, out: int) -> Plan:
    return plan_service(
        spec(
            hardware={"gpu": gpu, "tensorParallelSize": 1},
            workload={
                "rps": {"mean": 1},
                "inputTokens": {"mean": inp, "p99": None},
                "outputTokens": {"mean": out, "p99": None},
                "maxContextTokens": 8192,
            },
            slo={"ttftP99Seconds": None, "tpotP99Seconds": None},
            cost={"gpuHourPrice": None},
            serving={"maxNumSeqs": concurrency},
            assumptions={"kneeTpotRatio": 100},
        )
    )


def _closed_loop_tps(p: Plan, concurrency: int, out: int) -> float:
    return concurrency * out / (p.ttft_p99_estimate_s + out * p.tpot_estimate_s)


def estimate(case: Case) -> float:
    p = _plan(case.gpu, case.concurrency, case.input_tokens, case.output_tokens)
    if case.unit == "ms":
        return p.tpot_estimate_s * 1e3
    one = _plan(case.gpu, 1, case.input_tokens, case.output_tokens)
    return _closed_loop_tps(p, case.concurrency, case.output_tokens) / _closed_loop_tps(
        one, 1, case.output_tokens
    )


def main() -> int:
    print(f"{'case':38} {'GPU':15} {'measured':>10} {'estimate':>10} {'error':>8}")
    errors = []
    for c in CASES:
        est = estimate(c)
        err = est / c.measured - 1
        errors.append(abs(err))
        print(f"{c.name:38} {c.gpu:15} {c.measured:9.2f}{c.unit} {est:9.2f}{c.unit} {err:+8.1%}")
    print(f"mean absolute error {sum(errors) / len(errors):.1%}")
    for source in dict.fromkeys(c.source for c in CASES):
        print(f"source: {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
