"""The arrivals' dispersion sizing (``scaling/dispersion.py``) on and off, on named shapes of
the autoscaling suite (``benchmarks/autoscaling.py``), tokenscale alone, at mismatch 1.0 and
one cold start; the oracles and best static do not depend on it (run the suite for them).

For each shape: attainment, GPU-hours and the most replicas with ``dispersionSizing`` off
(today's default) and on, the index of dispersion the engine saw (median and maximum over its
decisions) and the room it asked for, and how many requests missed before the first replica
the engine added was Ready, and after (the launch fleet's misses: no added replica could have
served them).

    python benchmarks/dispersion.py [--shapes code bursty step azure-conv] [--cold-start 180]
"""

import argparse
import math
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.autoscaling import HELD_OUT, SUITE
from tokenscale.simulation import Setup, SimOptions
from tokenscale.simulation.recorder import Outcome
from tokenscale.simulation.run import ORACLE_ROUNDS, _replay
from tokenscale.simulation.summary import meets


def run(name: str, sizing: bool, cold_start_s: float) -> str:
    entry = next(e for e in (*SUITE, *HELD_OUT) if e.name == name)
    trace, spec = entry.build()
    policy = spec.scaling.policy.model_copy(update={"dispersion_sizing": sizing})
    spec = spec.model_copy(update={"scaling": spec.scaling.model_copy(update={"policy": policy})})
    opts = SimOptions(
        mismatch=1.0,
        cold_start_s=cold_start_s,
        oracle_repair_rounds=ORACLE_ROUNDS,
        timeline=True,
    )
    setup = Setup(spec, trace, opts, name)
    outcomes: list[Outcome] = []
    t0 = time.perf_counter()
    tokenscale = setup.policy("tokenscale")
    r = _replay(
        setup,
        "tokenscale",
        tokenscale,
        setup.initial_replicas("tokenscale"),
        cold_start_s,
        None,
        outcomes_out=outcomes,
    )
    seconds = time.perf_counter() - t0
    launch = r.timeline[0].replicas_ready if r.timeline else 0
    added = next((p.t_s for p in r.timeline if p.replicas_ready > launch), math.inf)
    early = sum(1 for o in outcomes if o.arrival_s < added and not meets(o, spec.slo))
    later = sum(1 for o in outcomes if o.arrival_s >= added and not meets(o, spec.slo))
    spreads = [p.dispersion_index for p in r.timeline if p.dispersion_index is not None]
    rooms = [p.dispersion_room for p in r.timeline if p.dispersion_room is not None]
    index = f"{statistics.median(spreads):.1f} / {max(spreads):.1f}" if spreads else "–"
    room = f"{max(rooms):.2f}" if rooms else "–"
    return (
        f"| {name} | {'on' if sizing else 'off'} | {r.slo_attainment * 100:.2f} % "
        f"| {r.gpu_hours:.2f} | {r.replicas_max} | {index} | {room} | {early} | {later} "
        f"| {seconds:.0f} |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--shapes",
        nargs="+",
        default=["code", "bursty", "step", "azure-conv"],
        choices=[e.name for e in (*SUITE, *HELD_OUT)],
    )
    ap.add_argument("--cold-start", type=float, default=180.0)
    args = ap.parse_args(argv)
    print(
        "| shape | dispersionSizing | attainment | GPU-h | max replicas "
        "| index median / max | room max | misses before the first added replica | after "
        "| seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.shapes:
        for sizing in (False, True):
            print(run(name, sizing, args.cold_start), flush=True)


if __name__ == "__main__":
    main()
