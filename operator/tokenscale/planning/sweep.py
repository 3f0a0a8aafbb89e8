"""Compare GPUs × TP × weight dtype for one spec, cheapest plans meeting the SLOs first."""

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from tokenscale.api.errors import SpecError
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


def sweep(
    spec: InferenceServiceSpec,
    gpus: Iterable[str] | None = None,
    tp_sizes: Iterable[int] = SWEEP_TP,
    dtypes: Iterable[WeightDtype] = SWEEP_DTYPES,
    name: str = "",
) -> list[SweepRow]:
    """Plan every combination; feasible rows first, by cost then GPU-hours per 1M output tokens."""
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
                                "tensor_parallel_size": tp,
                                "gpus_per_node": max(spec.hardware.gpus_per_node, tp),
                            }
                        ),
                        "model": spec.model.model_copy(update={"weight_dtype": dtype}),
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
    return sorted(rows, key=lambda r: r.sort_key)
