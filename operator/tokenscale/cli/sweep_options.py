"""``plan --sweep``'s choices from the command line: which GPUs, dtypes and TP sizes to try, and
GPU-hour prices given as ``--price KEY=PRICE`` or a ``--prices FILE`` (a YAML/JSON mapping)."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tokenscale.api.errors import SpecError, SpecIssue, did_you_mean
from tokenscale.api.inference_service import InferenceService
from tokenscale.api.model import WeightDtype
from tokenscale.api.yaml_loader import safe_load
from tokenscale.catalog import GPU_CATALOG
from tokenscale.planning.sweep import SWEEP_DTYPES, SWEEP_TP


@dataclass(frozen=True)
class SweepChoice:
    gpus: list[str] | None
    dtypes: list[WeightDtype]
    tp_sizes: list[int]
    prices: dict[str, float]


def _split(values: list[str] | None) -> list[str]:
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]


def _gpu_key(name: str, flag: str) -> str:
    by_lower = {k.lower(): k for k in GPU_CATALOG}
    key = by_lower.get(name.lower())
    if key is None:
        raise SpecError.single(
            flag,
            f"unknown GPU {name!r}{did_you_mean(name, list(GPU_CATALOG))}; use one of "
            f"{', '.join(GPU_CATALOG)}",
        )
    return key


def _price(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise SpecError.single(where, f"{value!r} is not a price; use a number >= 0")
    return float(value)


def sweep_choice(
    gpus: list[str] | None,
    dtypes: list[str] | None,
    tps: list[str] | None,
    price: list[str] | None,
    prices_file: Path | None,
    prices_text: str | None,
) -> SweepChoice:
    """The validated choice; a :class:`SpecError` naming the flag for anything unknown."""
    issues: list[SpecIssue] = []
    keys: list[str] | None = None
    if gpus:
        keys = []
        for name in _split(gpus):
            try:
                keys.append(_gpu_key(name, "--gpu"))
            except SpecError as err:
                issues += err.issues
    dtype_list = _split(dtypes) or list(SWEEP_DTYPES)
    bad = [d for d in dtype_list if d not in ("fp32", "bf16", "fp16", "fp8", "int8", "int4")]
    issues += [SpecIssue("--dtype", f"{d!r}: use bf16, fp16, fp32, fp8, int8 or int4") for d in bad]
    tp_list: list[int] = []
    for text in _split(tps) or [str(t) for t in SWEEP_TP]:
        if text.isdigit() and int(text) in (1, 2, 4, 8):
            tp_list.append(int(text))
        else:
            issues.append(SpecIssue("--tp", f"{text!r}: use 1, 2, 4 or 8"))
    table: dict[str, float] = {}
    if prices_text is not None:
        where = f"--prices {prices_file}"
        data = safe_load(prices_text, where)
        if not isinstance(data, dict):
            issues.append(SpecIssue(where, "use a mapping of GPU key to price per GPU-hour"))
        else:
            for name, value in data.items():
                try:
                    table[_gpu_key(str(name), f"{where}: {name}")] = _price(
                        value, f"{where}: {name}"
                    )
                except SpecError as err:
                    issues += err.issues
    for item in price or []:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise SpecError.single("--price", f"{item!r}: use KEY=PRICE (H100-SXM-80GB=2.5)")
            try:
                number: Any = float(value)
            except ValueError:
                number = value
            table[_gpu_key(name.strip(), "--price")] = _price(number, f"--price {item}")
        except SpecError as err:
            issues += err.issues
    if issues:
        raise SpecError(issues)
    return SweepChoice(keys, cast(list[WeightDtype], dtype_list), tp_list, table)


def with_prices(service: InferenceService, prices: dict[str, float]) -> InferenceService:
    """``service`` with command-line prices over its ``cost.gpuHourPrices``."""
    if not prices:
        return service
    cost = service.spec.cost
    merged = {**cost.gpu_hour_prices, **prices}
    spec = service.spec.model_copy(
        update={"cost": cost.model_copy(update={"gpu_hour_prices": merged})}
    )
    return service.model_copy(update={"spec": spec})
