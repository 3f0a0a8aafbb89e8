"""Which ``tokenscale simulate`` flags each fleet shape replays.

A flag that a shape's replay cannot honour — alone, beside another flag of the run
(:data:`PAIRS`), or ``--timeline`` without ``-o json`` — is refused (exit 2) naming the flag,
the shape and what to do instead: never parsed and then ignored. The shapes: one pool (every
flag), a GPU mix
(``spec.hardware.variants``: fixed mixes and the mix autoscaled, ``--stockout``, ``--timeline``),
prefill/decode pools (``spec.serving.disaggregation`` when the plan runs two pools: the operator's
per-role policy, ``--explain``, ``--plot``, ``--timeline``), length classes
(``spec.serving.lengthClasses``: tokenscale per pool, each pool pinned at its plan, or each
arrangement's smallest fixed fleet meeting the target for every class, against one shared
pool; ``--timeline``) and ``--architectures`` (static
fleets of each architecture against the planner's choice, and the pools scaled per role).
"""

from collections.abc import Mapping
from typing import Literal

from tokenscale.cli.inputs import bad_input

Shape = Literal["pool", "mix", "pd", "length", "architectures"]

SHAPE_WORDS: Mapping[Shape, str] = {
    "pool": "one pool",
    "mix": "a GPU mix (spec.hardware.variants)",
    "pd": "prefill/decode pools (spec.serving.disaggregation)",
    "length": "length classes (spec.serving.lengthClasses)",
    "architectures": "--architectures (static fleets of each architecture)",
}

#: The policies each shape replays (``all``: every one it has).
POLICIES: Mapping[Shape, tuple[str, ...]] = {
    "mix": ("tokenscale", "static", "all"),
    "pd": ("tokenscale",),
    "length": ("tokenscale", "static", "best-static"),
    "architectures": ("tokenscale",),
}

_INSTEAD: Mapping[Shape, str] = {
    "mix": "replay one variant's spec (spec.hardware.gpu) for that",
    "pd": "replay the spec with spec.serving.disaggregation: off for that, or compare one pool "
    "with the two by --architectures",
    "length": "replay the spec without spec.serving.lengthClasses for that",
    "architectures": "drop --architectures for that",
}

#: Flags a shape's replay has no answer for.
UNSUPPORTED: Mapping[Shape, tuple[str, ...]] = {
    "mix": ("--fault", "--explain", "--plot", "--architectures", "--queue-target", "--kv-target"),
    "pd": ("--fault", "--queue-target", "--kv-target"),
    "length": (
        "--fault",
        "--explain",
        "--plot",
        "--architectures",
        "--queue-target",
        "--kv-target",
        "--stockout",
    ),
    "architectures": (
        "--fault",
        "--explain",
        "--plot",
        "--timeline",
        "--queue-target",
        "--kv-target",
    ),
}

_WHY: Mapping[str, str] = {
    "--fault": "the fault drills replay one pool",
    "--explain": "the decision it prints is one pool's",
    "--plot": "the timeline it draws is one pool's",
    "--timeline": "it compares static fleets, which have no scaling timeline",
    "--architectures": "it compares one pool with prefill/decode pools of one GPU type",
    "--stockout": "it stops a GPU variant's placements, and each class pool runs one GPU type",
    "--queue-target": "it sets the one-pool queue-threshold policy",
    "--kv-target": "it sets the one-pool kv-threshold policy",
}


#: Flags a shape replays, but not beside another flag (or policy) of the same run: (flag,
#: the other, what the run would do with the flag, the fix).
PAIRS: Mapping[Shape, tuple[tuple[str, str, str, str], ...]] = {
    "pool": (
        (
            "--explain",
            "--fault",
            "the drill report explains no decision",
            "drop one, or explain the run without --fault",
        ),
        (
            "--explain",
            "--policy",
            "it explains tokenscale's decision, and the policy replayed is not tokenscale",
            "use --policy tokenscale (or all)",
        ),
    ),
    "mix": (
        (
            "--stockout",
            "--policy static",
            "a stockout stops the autoscaled mix placing pods, and static replays fixed mixes",
            "use --policy tokenscale (or all)",
        ),
        (
            "--timeline",
            "--policy static",
            "the timeline is the autoscaled mix's, and static replays fixed mixes",
            "use --policy tokenscale (or all)",
        ),
    ),
}

#: The policies ``--explain`` has a decision in (one pool: tokenscale's, also inside ``all``).
EXPLAINED = ("tokenscale", "all")


def refuse_unsupported(
    shape: Shape, given: Mapping[str, bool], policy: str, as_json: bool = True
) -> None:
    """Exit 2 for the first flag in ``given`` (flag → given) or ``policy`` that ``shape``
    cannot replay, alone or beside another flag of the run; and for ``--timeline`` without
    ``-o json``, the only output that carries it."""
    words = SHAPE_WORDS[shape]
    for flag in UNSUPPORTED.get(shape, ()):
        if given.get(flag):
            raise bad_input(
                f"{flag} is not available for {words}: {_WHY[flag]}; drop {flag}, or "
                f"{_INSTEAD[shape]}"
            )
    allowed = POLICIES.get(shape)
    if allowed is not None and policy not in allowed:
        raise bad_input(
            f"--policy {policy} is not available for {words}: it replays "
            f"{', '.join(allowed)}; use --policy {allowed[0]}, or {_INSTEAD[shape]}"
        )
    pairs = {
        "--fault": bool(given.get("--fault")),
        "--policy": policy not in EXPLAINED,
        "--policy static": policy == "static",
    }
    for flag, other, why, fix in PAIRS.get(shape, ()):
        if given.get(flag) and pairs[other]:
            shown = f"--policy {policy}" if other == "--policy" else other
            raise bad_input(f"{flag} with {shown} for {words}: {why}; {fix}")
    if given.get("--timeline") and not as_json:
        raise bad_input(
            f"--timeline for {words}: the timeline is written only in -o json's output; add -o json"
        )
