"""Bisection on a monotone predicate: the searches the planner runs over batches, rates and
replica counts."""

from collections.abc import Callable


def last_true(ok: Callable[[float], bool], lo: float, hi: float, steps: int, rel: float) -> float:
    """The largest ``x`` in ``[lo, hi]`` with ``ok(x)`` (to ``rel`` of ``x``, or ``steps``
    halvings), ``ok`` true below some point and false above it; ``lo`` is taken to hold."""
    for _ in range(steps):
        mid = (lo + hi) / 2.0
        if ok(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo < rel * hi:
            break
    return lo


def first_true(ok: Callable[[float], bool], lo: float, hi: float, steps: int, rel: float) -> float:
    """The smallest ``x`` in ``[lo, hi]`` with ``ok(x)``, ``ok`` false below some point and true
    above it; ``hi`` is taken to hold."""
    for _ in range(steps):
        mid = (lo + hi) / 2.0
        if ok(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo < rel * hi:
            break
    return hi
