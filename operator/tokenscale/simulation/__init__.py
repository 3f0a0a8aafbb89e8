"""The fleet simulator: replay a trace against simulated vLLM engines under a scaling policy.

Pure like the planner and the engine: traces arrive as text, time is simulated, randomness
is seeded; the CLI reads files, draws progress and plots.
"""

from tokenscale.simulation.errors import TraceError
from tokenscale.simulation.policies import POLICIES, PolicyName
from tokenscale.simulation.result import SimResult, TimelinePoint
from tokenscale.simulation.run import Setup, SimOptions, SimulationError, simulate
from tokenscale.simulation.trace import Trace, parse_trace, scale_trace, synthetic_trace

__all__ = [
    "POLICIES",
    "PolicyName",
    "Setup",
    "SimOptions",
    "SimResult",
    "SimulationError",
    "TimelinePoint",
    "Trace",
    "TraceError",
    "parse_trace",
    "scale_trace",
    "simulate",
    "synthetic_trace",
]
