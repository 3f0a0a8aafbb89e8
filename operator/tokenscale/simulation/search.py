"""The static search: the fewest replicas a fixed fleet (a pinned policy) needs to pass a test.

One search for the fixed fleets of every shape that searches a count (a mix's last variant
beside the others' counts, each architecture's pools); the one-pool ``best-static``
(``run.best_static``) keeps its own bisection between the oracle's bounds, whose probes it
caches and lets give up early.
"""

from collections.abc import Callable


def smallest(ok: Callable[[int], bool], start: int, lo: int, most: int) -> int | None:
    """The smallest ``n`` in ``[lo, most]`` with ``ok(n)``, ``ok`` monotone (a fixed fleet only
    gains capacity with a replica), searched from ``start``: galloping down while ``ok``
    holds, doubling up while it does not, then bisection. None: not even ``most`` passes."""
    n = min(max(start, lo), most)
    if ok(n):
        hi_ok, step = n, 1
        while hi_ok - step >= lo and ok(hi_ok - step):
            hi_ok -= step
            step *= 2
        lo_fail = max(hi_ok - step, lo - 1)
    else:
        lo_fail = n
        while True:
            if lo_fail >= most:
                return None
            hi_ok = min(most, max(2 * lo_fail, lo_fail + 1))
            if ok(hi_ok):
                break
            lo_fail = hi_ok
    while hi_ok - lo_fail > 1:
        mid = (lo_fail + hi_ok) // 2
        if ok(mid):
            hi_ok = mid
        else:
            lo_fail = mid
    return hi_ok
