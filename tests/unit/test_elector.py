"""The Lease elector against an in-memory Lease with optimistic concurrency and a fake clock."""

from typing import Any

from tokenscale.controller.leader import Elector
from tokenscale.controller.leadership import ElectionConfig


class MemoryLease:
    """create → 409 if it exists; replace → 409 unless the version matches; down → error."""

    def __init__(self) -> None:
        self.spec: dict[str, Any] | None = None
        self.version = 0
        self.down = False

    def read(self) -> tuple[dict[str, Any] | None, str | None]:
        if self.down:
            raise ConnectionError("API server unreachable")
        return (dict(self.spec), str(self.version)) if self.spec is not None else (None, None)

    def create(self, spec: dict[str, Any]) -> bool:
        if self.spec is not None:
            return False
        self.spec, self.version = dict(spec), self.version + 1
        return True

    def replace(self, spec: dict[str, Any], version: str) -> bool:
        if self.down:
            raise ConnectionError("API server unreachable")
        if version != str(self.version):
            return False
        self.spec, self.version = dict(spec), self.version + 1
        return True


def _elector(identity: str, lease: MemoryLease, clock: list[float]) -> Elector:
    config = ElectionConfig(identity=identity, namespace="ops")
    return Elector(config, lease, clock=lambda: clock[0], stamp=lambda: f"t{clock[0]:g}")  # type: ignore[arg-type]


def test_one_leads_the_other_takes_over_after_the_lease_and_an_outage_ends_the_lead() -> None:
    lease, clock = MemoryLease(), [0.0]
    a, b = _elector("a", lease, clock), _elector("b", lease, clock)
    assert a.attempt()
    assert not b.attempt()
    for _ in range(10):  # a renews every 2 s; b keeps waiting
        clock[0] += 2
        assert a.attempt()
        assert not b.attempt()
    lease.down = True  # the API goes away: a cannot renew
    clock[0] += 9
    assert a.attempt()  # still within the renew deadline (10 s)
    clock[0] += 2
    assert not a.attempt()  # 11 s without renewal: a stops leading
    lease.down = False
    clock[0] += 5  # b has not seen the record change for 16 s > 15 s
    assert b.attempt()
    assert lease.spec is not None
    assert lease.spec["holderIdentity"] == "b"
    assert lease.spec["leaseTransitions"] == 1
    assert not a.attempt()  # a sees b: no way back in


def test_release_hands_over_at_once() -> None:
    lease, clock = MemoryLease(), [0.0]
    a, b = _elector("a", lease, clock), _elector("b", lease, clock)
    assert a.attempt()
    assert not b.attempt()
    a.release()
    assert not a.leading()
    clock[0] += 1
    assert b.attempt()
