"""Bisection on a monotone predicate: the searches the planner runs over batches, rates and
replica counts."""

from collections.abc import Callable


def _bracket(
    below: Callable[[float], bool], lo: float, hi: float, steps: int, rel: float
) -> tuple[float, float]:
    """Halve ``[lo, hi]`` keeping ``below(lo)`` true and ``below(hi)`` false, for ``steps``
    halvings or until it is within ``rel`` of ``hi``."""
    for _ in range(steps):
        mid = (lo + hi) / 2.0
        if below(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo < rel * hi:
            break
    return lo, hi


def last_true(ok: Callable[[float], bool], lo: float, hi: float, steps: int, rel: float) -> float:
    """The largest ``x`` in ``[lo, hi]`` with ``ok(x)``, ``ok`` true below some point and false
    above it; ``lo`` is taken to hold."""
    return _bracket(ok, lo, hi, steps, rel)[0]


def first_true(ok: Callable[[float], bool], lo: float, hi: float, steps: int, rel: float) -> float:
    """The smallest ``x`` in ``[lo, hi]`` with ``ok(x)``, ``ok`` false below some point and true
    above it; ``hi`` is taken to hold."""
    return _bracket(lambda x: not ok(x), lo, hi, steps, rel)[1]
