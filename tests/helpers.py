"""Spec builders shared by the tests."""

import copy
from pathlib import Path
from typing import Any

from tokenscale.api import InferenceService, InferenceServiceSpec

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "deploy" / "examples").glob("*.yaml"))
HF_CONFIGS = Path(__file__).resolve().parent / "fixtures" / "hf_configs"

BASE: dict[str, Any] = {
    "apiVersion": "tokenscale.io/v1alpha1",
    "kind": "InferenceService",
    "metadata": {"name": "test"},
    "spec": {
        "model": {"name": "meta-llama/Llama-3.1-8B-Instruct", "catalog": "llama-3.1-8b"},
        "hardware": {"gpu": "H100-SXM-80GB", "tensorParallelSize": 1},
        "workload": {
            "rps": {"mean": 10},
            "inputTokens": {"mean": 1000, "p99": 4000},
            "outputTokens": {"mean": 200, "p99": 800},
            "maxContextTokens": 16384,
        },
        "slo": {"ttftP99Seconds": 2.0, "tpotP99Seconds": 0.05},
        "cost": {"gpuHourPrice": 3.0},
    },
}


def deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        elif value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def manifest(**spec_patch: Any) -> dict[str, Any]:
    """The base manifest with ``spec`` sections deep-merged (None deletes a key)."""
    return deep_merge(BASE, {"spec": spec_patch})


def spec(**spec_patch: Any) -> InferenceServiceSpec:
    return InferenceService.model_validate(manifest(**spec_patch)).spec


def bench_step(c: int, rps: float, ttft: float, tpot: float, **extra: Any) -> dict[str, Any]:
    """One ramp step of a bench profile (camelCase, as the file holds it)."""
    step: dict[str, Any] = {
        "phase": "ramp",
        "concurrency": c,
        "durationSeconds": 30.0,
        "requests": 100,
        "errors": 0,
        "timeouts": 0,
        "inputTokensMean": 1000,
        "outputTokensMean": 200,
        "ttftP50Seconds": ttft / 2,
        "ttftP95Seconds": ttft * 0.9,
        "ttftP99Seconds": ttft,
        "tpotP50Seconds": tpot * 0.9,
        "tpotP95Seconds": tpot * 0.95,
        "tpotP99Seconds": tpot,
        "itlP99Seconds": tpot * 2,
        "e2eP50Seconds": 200 * tpot,
        "e2eP95Seconds": 200 * tpot,
        "e2eP99Seconds": 200 * tpot + ttft,
        "outputTps": rps * 200,
        "inputTps": rps * 1000,
        "requestsPerSecond": rps,
    }
    step.update(extra)
    return step


PROFILE: dict[str, Any] = {
    "model": "meta-llama/Llama-3.1-8B-Instruct",
    "url": "http://vllm:8000",
    "gpu": "H100-SXM-80GB",
    "tensorParallelSize": 1,
    "complete": True,
    "kneeConcurrency": 32,
    "operatingConcurrency": 32,
    "steps": [
        bench_step(8, 1.5, 0.2, 0.020),
        bench_step(16, 2.8, 0.3, 0.030),
        bench_step(32, 5.0, 0.5, 0.045),
        bench_step(64, 6.0, 1.5, 0.080),  # misses the 50 ms TPOT SLO
    ],
}
