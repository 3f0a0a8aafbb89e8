"""The autoscaling suite's mixed fleets (``benchmarks/autoscaling_mixed.py``, ``--suite
mixed``): every entry builds a feasible mix plan of at least two variants, its stockouts name
variants of that plan, and its names are the suite's own."""

import pytest
from benchmarks.autoscaling import HELD_OUT, SUITE, main
from benchmarks.autoscaling_mixed import MIXED_SUITE, OURS, MixedCase, MixedEntry, markdown

from tokenscale.planning import plan_service
from tokenscale.simulation.mix import mix_engines


@pytest.mark.parametrize("entry", MIXED_SUITE, ids=[e.name for e in MIXED_SUITE])
def test_every_mixed_entry_builds_a_mix_plan(entry: MixedEntry) -> None:
    trace, spec = entry.build()
    assert trace.requests
    plan = plan_service(spec, "suite-mixed")
    assert plan.feasible, plan.infeasible_reasons
    assert plan.mix is not None
    engines = mix_engines(spec, plan, trace.block_tokens)
    names = {e.name for e in engines}
    assert len(names) >= 2
    assert all(e.gpu_hour_price is not None for e in engines)  # compared in GPU cost
    assert {s.variant for s in entry.stockouts} <= names
    assert all(0 < s.from_s < trace.duration_s for s in entry.stockouts)  # mid-trace


def test_the_mixed_suite_has_a_plain_case_and_a_stockout_case_of_its_own_names() -> None:
    assert any(not e.stockouts for e in MIXED_SUITE)
    assert any(e.stockouts for e in MIXED_SUITE)
    names = [e.name for e in MIXED_SUITE]
    assert len(set(names)) == len(names)
    assert not set(names) & {e.name for e in (*SUITE, *HELD_OUT)}


def test_the_table_of_an_empty_case_has_only_its_header() -> None:
    table = markdown([MixedCase("x", "nothing run")])
    assert table.count("\n") == 1
    assert OURS not in table


def test_suite_mixed_is_a_choice_of_the_autoscaling_script() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--suite", "nope"])
    assert exc.value.code == 2
