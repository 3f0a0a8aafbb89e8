"""``spec.serving.lengthClasses``: requests split by prompt length, one pool per class.

A class takes the prompts up to its ``maxInputTokens`` that no earlier class took; the last
class has no bound and takes the rest. Each class is planned as a pool of its own, sized for
its share of the load with its own token statistics, so a long prompt no longer sets the chunk
budget, the KV headroom and the TTFT queue of the short ones (``planning/length_classes.py``).

The statistics of a class are estimated from ``spec.workload`` (the prompt lengths a
log-normal through the stated mean and P99; ``planning/length_split.py``) unless the class
states its own ``share``, ``inputTokens`` or ``outputTokens``.
"""

import itertools
from collections.abc import Sequence

from pydantic import Field

from tokenscale.api.base import MAX_TOKENS, ApiModel
from tokenscale.api.workload_stats import TokenDistribution

MAX_LENGTH_CLASSES = 4


class LengthClass(ApiModel):
    """One class of prompt lengths and the pool that serves it."""

    name: str = Field(
        min_length=1,
        max_length=20,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="The class's name (a DNS label: its workload is <service>-<name>).",
    )
    max_input_tokens: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOKENS,
        description="Longest prompt the class takes (the last class: absent, it takes the rest).",
    )
    share: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        description="Fraction of the requests in the class; absent = estimated from "
        "spec.workload.inputTokens (a log-normal through its mean and P99).",
    )
    input_tokens: TokenDistribution | None = Field(
        default=None,
        description="The class's prompt tokens; absent = the workload's prompts cut at the "
        "class's bounds.",
    )
    output_tokens: TokenDistribution | None = Field(
        default=None,
        description="The class's generated tokens; absent = the workload's (answer length "
        "taken as independent of prompt length).",
    )


def problems(classes: Sequence[LengthClass]) -> list[str]:
    """What makes ``classes`` unplannable, each naming the field and the fix (empty: none)."""
    out: list[str] = []
    names = [c.name for c in classes]
    if len(classes) < 2:
        out.append(
            "lengthClasses: give at least two classes (one class is the whole workload: remove "
            "lengthClasses for one pool)"
        )
    if len(classes) > MAX_LENGTH_CLASSES:
        out.append(f"lengthClasses: at most {MAX_LENGTH_CLASSES} classes, {len(classes)} given")
    for name in sorted({n for n in names if names.count(n) > 1}):
        out.append(f"lengthClasses: the name {name!r} is given twice; every class needs its own")
    bounded = list(classes[:-1])
    for i, c in enumerate(bounded):
        if c.max_input_tokens is None:
            out.append(
                f"lengthClasses[{i}] ({c.name}): maxInputTokens is required on every class but "
                "the last (the last takes the prompts longer than every bound)"
            )
    if classes and classes[-1].max_input_tokens is not None:
        out.append(
            f"lengthClasses[{len(classes) - 1}] ({classes[-1].name}): the last class takes the "
            "rest; remove its maxInputTokens (or add a class after it without one)"
        )
    bounds = [c.max_input_tokens for c in bounded if c.max_input_tokens is not None]
    if any(later <= earlier for earlier, later in itertools.pairwise(bounds)):
        out.append(
            f"lengthClasses: maxInputTokens must rise from class to class, got {bounds}: order "
            "the classes from the shortest prompts to the longest"
        )
    shares = [c.share for c in classes if c.share is not None]
    if shares and len(shares) < len(classes):
        out.append(
            "lengthClasses: share is given on some classes only; give it on every class (they "
            "sum to 1) or on none (estimated from spec.workload.inputTokens)"
        )
    elif shares and abs(sum(shares) - 1.0) > 0.01:
        out.append(f"lengthClasses: the shares sum to {sum(shares):.3g}; they must sum to 1")
    return out
