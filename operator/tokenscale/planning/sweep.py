"""Compare GPUs × TP × weight dtype for one spec, cheapest plans meeting the SLOs first.

A price belongs to one GPU: ``cost.gpuHourPrices[key]``, or ``cost.gpuHourPrice`` for the GPU
the spec names. A GPU without its own price gets no cost (never another GPU's price), and when
any feasible row lacks a cost the rows are ranked by GPU-hours per million output tokens instead
(:func:`ranking` says which).
"""

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tokenscale.api.cost import Cost
from tokenscale.api.errors import SpecError, SpecIssue
from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.api.model import WeightDtype
from tokenscale.catalog.gpus import GPU_CATALOG
from tokenscale.planning.planner import plan_service
from tokenscale.planning.result import Plan

SWEEP_DTYPES: tuple[WeightDtype, ...] = ("bf16", "fp8", "int8", "int4")
SWEEP_TP: tuple[int, ...] = (1, 2, 4, 8)


class SweepRow(BaseModel):
    """One configuration tried; ``plan`` is None when the spec is invalid for it."""

    model_config = ConfigDict(frozen=True)

    gpu: str
    tensor_parallel_size: int
    weight_dtype: str
    plan: Plan | None
    error: str | None = None

    @property
    def sort_key(self) -> tuple[int, float, float, int]:
        """Feasible first, then cost, then GPU-hours per 1M output tokens, then smaller TP."""
        p = self.plan
        if p is None or not p.feasible:
            return (1, float("inf"), float("inf"), self.tensor_parallel_size)
        return (
            0,
            p.cost_per_million_output_tokens
            if p.cost_per_million_output_tokens is not None
            else float("inf"),
            p.gpu_hours_per_million_output_tokens or float("inf"),
            p.tensor_parallel_size,
        )

    @property
    def gpu_hours_key(self) -> tuple[int, float, int]:
        """Feasible first, then GPU-hours per 1M output tokens, then smaller TP."""
        p = self.plan
        if p is None or not p.feasible:
            return (1, float("inf"), self.tensor_parallel_size)
        return (0, p.gpu_hours_per_million_output_tokens or float("inf"), p.tensor_parallel_size)


Ranking = Literal["cost", "gpu-hours"]


def ranking(rows: Iterable[SweepRow]) -> Ranking:
    """``cost`` when every feasible row has a price of its own GPU, else ``gpu-hours``."""
    feasible = [r.plan for r in rows if r.plan is not None and r.plan.feasible]
    if feasible and all(p.cost_per_million_output_tokens is not None for p in feasible):
        return "cost"
    return "gpu-hours"


def _cost_for(spec: InferenceServiceSpec, gpu: str) -> Cost:
    """The spec's cost section as it applies to ``gpu``: its own price or none."""
    cost = spec.cost
    own = spec.hardware.gpu is not None and spec.hardware.gpu.lower() == gpu.lower()
    if gpu in cost.gpu_hour_prices or own:
        return cost
    return cost.model_copy(update={"gpu_hour_price": None})


def sweep(
    spec: InferenceServiceSpec,
    gpus: Iterable[str] | None = None,
    tp_sizes: Iterable[int] = SWEEP_TP,
    dtypes: Iterable[WeightDtype] = SWEEP_DTYPES,
    name: str = "",
) -> list[SweepRow]:
    """Plan every combination; feasible rows first, by cost (when every feasible row has one,
    see :func:`ranking`) else by GPU-hours per 1M output tokens."""
    unknown = [k for k in spec.cost.gpu_hour_prices if k not in GPU_CATALOG]
    if unknown:
        raise SpecError(
            [
                SpecIssue(
                    f"spec.cost.gpuHourPrices.{k}",
                    f"{k!r} is not a GPU catalog key; use one of {', '.join(GPU_CATALOG)}",
                )
                for k in unknown
            ]
        )
    rows: list[SweepRow] = []
    gpu_keys = list(gpus) if gpus is not None else list(GPU_CATALOG)
    dtype_list, tp_list = list(dtypes), list(tp_sizes)
    for gpu in gpu_keys:
        for dtype in dtype_list:
            for tp in tp_list:
                candidate = spec.model_copy(
                    update={
                        "hardware": spec.hardware.model_copy(
                            update={
                                "gpu": gpu,
                                "gpu_spec": None,
                                "variants": None,
                                "tensor_parallel_size": tp,
                                "gpus_per_node": max(spec.hardware.gpus_per_node, tp),
                            }
                        ),
                        "model": spec.model.model_copy(update={"weight_dtype": dtype}),
                        "cost": _cost_for(spec, gpu),
                    }
                )
                try:
                    plan = plan_service(candidate, name)
                except SpecError as exc:
                    rows.append(
                        SweepRow(
                            gpu=gpu,
                            tensor_parallel_size=tp,
                            weight_dtype=dtype,
                            plan=None,
                            error=str(exc),
                        )
                    )
                    continue
                rows.append(
                    SweepRow(gpu=gpu, tensor_parallel_size=tp, weight_dtype=dtype, plan=plan)
                )
    if ranking(rows) == "cost":
        return sorted(rows, key=lambda r: r.sort_key)
    return sorted(rows, key=lambda r: r.gpu_hours_key)
