"""tokenscale: size and scale vLLM inference fleets from first principles and live metrics."""

__version__ = "0.1.0"
