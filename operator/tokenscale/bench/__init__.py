"""``tokenscale bench``: measure an OpenAI-compatible endpoint and write a profile."""

from tokenscale.api.profile import BenchProfile, BenchStep
from tokenscale.bench.client import EndpointError
from tokenscale.bench.runner import BenchConfig, BenchState, partial_profile, run_bench

__all__ = [
    "BenchConfig",
    "BenchProfile",
    "BenchState",
    "BenchStep",
    "EndpointError",
    "partial_profile",
    "run_bench",
]
