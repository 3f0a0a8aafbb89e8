"""The LoRA accuracy file (benchmarks/accuracy/lora.yaml) and its scorer: held out by source, the
fit reads only the fit set, the planner's kernel constants are the fit's, and the step model
grows with the distinct adapters."""

import copy
import dataclasses
from typing import Any

import pytest
import yaml
from benchmarks import accuracy_lora
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import ROOT
from tokenscale.planning import forecast_conditions, resolve
from tokenscale.planning.lora import (
    LORA_ADAPTER_KERNEL_SECONDS,
    LORA_KERNEL_SECONDS,
    LoraPerfModel,
)
from tokenscale.planning.planner import perf_at

DATA = yaml.safe_load((ROOT / "benchmarks" / "accuracy" / "lora.yaml").read_text())
ENTRIES = accuracy_lora.load()


def test_every_entry_states_its_validity_why_and_a_known_source() -> None:
    for e in DATA["measurements"]:
        assert e["validity"] in ("measured", "lower-bound", "excluded"), e["id"]
        assert e["validity_reason"].strip(), e["id"]
        assert e["source"] in DATA["sources"], e["id"]
        assert e["quote"].strip(), e["id"]
    ids = [e["id"] for e in DATA["measurements"]]
    assert len(ids) == len(set(ids))


def test_the_held_out_set_is_whole_sources_apart_from_the_fit_set() -> None:
    for src, meta in DATA["sources"].items():
        assert meta.get("split") in ("fit", "held-out"), src
    assert not any("split" in e or "held_out" in e for e in DATA["measurements"])
    scored = [e for e in ENTRIES if e["validity"] == "measured"]
    held = {e["source"] for e in scored if e["held_out"]}
    fit = {e["source"] for e in scored if not e["held_out"]}
    assert held
    assert fit
    assert not held & fit
    share = sum(e["held_out"] for e in scored) / len(scored)
    assert 0.3 <= share <= 0.5  # about a third or more, by whole sources


def _perturbed(entries: list[dict[str, Any]], held_out: bool) -> list[dict[str, Any]]:
    out = copy.deepcopy(entries)
    for e in out:
        if e["held_out"] == held_out and e.get("itl_ms_with") is not None:
            e["itl_ms_with"] *= 3.0
    return out


def test_the_fit_reads_only_the_fit_set() -> None:
    base = accuracy_lora.fit(ENTRIES)
    assert base[2] >= 10
    assert accuracy_lora.fit(_perturbed(ENTRIES, held_out=True)) == base
    assert accuracy_lora.fit(_perturbed(ENTRIES, held_out=False))[:2] != base[:2]


def test_the_planner_uses_the_fitted_constants() -> None:
    t_kernel, t_adapter, _ = accuracy_lora.fit(ENTRIES)
    assert t_kernel == pytest.approx(LORA_KERNEL_SECONDS, rel=0.01)
    assert t_adapter == pytest.approx(LORA_ADAPTER_KERNEL_SECONDS, rel=0.01)


def test_excluded_entries_are_printed_not_scored() -> None:
    result = accuracy_lora.evaluate(ENTRIES)
    excluded = [r for r in result["entries"] if r["validity"] == "excluded"]
    assert excluded
    assert all("error" not in r for r in excluded)
    counted = result["fit"]["entries"] + result["held_out"]["entries"]
    assert counted == sum(e["validity"] == "measured" for e in ENTRIES)


def _model(adapters: int) -> LoraPerfModel:
    m = next(e for e in ENTRIES if e["validity"] == "measured" and e.get("itl_ms_with"))
    on, _ = accuracy_lora.models(m | {"adapters": adapters})
    return on


_MODEL = _model(300)


@given(st.floats(min_value=0.0, max_value=299.0), st.floats(min_value=0.5, max_value=50.0))
def test_the_lora_step_grows_with_the_distinct_adapters(d: float, more: float) -> None:
    on = _MODEL
    assert on.lora is not None
    assert on.lora.kernel_seconds_for(d + more, 1, on._bw) > on.lora.kernel_seconds_for(
        d, 1, on._bw
    )


def test_the_knee_floor_carries_the_one_adapter_kernels() -> None:
    m = next(e for e in ENTRIES if e["validity"] == "measured" and e.get("itl_ms_with"))
    r = resolve(accuracy_lora._spec(m), m["id"])
    cond = forecast_conditions(r)
    on = perf_at(r, cond, 1)
    off = perf_at(dataclasses.replace(r, lora=None), cond, 1)
    assert isinstance(on, LoraPerfModel)
    assert on.lora is not None
    one = on.lora.kernel_seconds_for(1.0, 1, on._bw)
    assert on.weight_floor_seconds == pytest.approx(off.weight_floor_seconds + one)
