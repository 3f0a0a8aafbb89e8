"""Data shipped with the package (a shell package: it reads package files).

Request traces (their licences and attribution sit beside them in ``tokenscale/data/traces/``,
README included): the default load of ``tokenscale playground``, the ``tokenscale simulate``
examples, the autoscaling benchmark and the tests.

- ``azure-2023-conv.csv``: one hour of an LLM conversation service's arrivals (Azure LLM
  inference trace 2023; Patel et al., "Splitwise", ISCA 2024; CC-BY-4.0).
- ``mooncake-synthetic.jsonl``: 17 minutes of long-context requests with prefix-block ids
  (Qin et al., "Mooncake", FAST 2025; Apache-2.0).
"""

from importlib import resources
from pathlib import Path

AZURE_CONVERSATION = "azure-2023-conv.csv"
MOONCAKE_SYNTHETIC = "mooncake-synthetic.jsonl"
BUNDLED_TRACES = (AZURE_CONVERSATION, MOONCAKE_SYNTHETIC)


def bundled_trace(name: str) -> Path:
    """The path of a shipped trace; ``KeyError`` naming the choices for an unknown name."""
    if name not in BUNDLED_TRACES:
        raise KeyError(f"no bundled trace {name!r}; choose one of {', '.join(BUNDLED_TRACES)}")
    return Path(str(resources.files("tokenscale") / "data" / "traces" / name))
