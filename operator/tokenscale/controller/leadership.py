"""PURE: leader election on a ``coordination.k8s.io`` Lease, as a small state machine.

The Kubernetes convention (client-go's ``leaderelection``): one Lease names its holder and
how long a claim lasts. Every ``retry`` seconds each candidate reads the Lease and takes one
step:

- no Lease: create it naming itself (the API server refuses the second create: 409);
- it holds the Lease: renew (write ``renewTime``);
- another holds it and the record has not changed for ``leaseDurationSeconds`` *of our own
  clock* (never compare our clock with the writer's): take it over, ``leaseTransitions`` + 1;
- otherwise: wait.

Every write is conditional on the ``resourceVersion`` read, so of two candidates racing for
an expired Lease exactly one wins. The leader counts as leading only until ``renew_deadline``
after its last successful write; ``renew_deadline`` < ``lease_duration``, so it has stopped
working before anybody else may take over. Released on a clean stop (holder emptied), so a
rolling update hands over at once instead of after a lease duration.

Times: ``now_s`` is a monotonic clock (seconds) for expiry; ``stamp`` is the RFC 3339
MicroTime written into the record for people to read.
"""

from dataclasses import dataclass, replace
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ElectionConfig(BaseModel):
    """Who we are and the three durations (client-go's defaults: 15 s, 10 s, 2 s)."""

    model_config = ConfigDict(frozen=True)

    identity: str = Field(min_length=1, description="This candidate (the pod name).")
    namespace: str = Field(min_length=1, description="Namespace of the Lease.")
    name: str = Field(default="tokenscale-leader", min_length=1, description="Lease name.")
    lease_duration_s: float = Field(default=15.0, gt=0, description="A claim lasts this long.")
    renew_deadline_s: float = Field(default=10.0, gt=0, description="Leader gives up after.")
    retry_period_s: float = Field(default=2.0, gt=0, description="Between two attempts.")

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.retry_period_s < self.renew_deadline_s < self.lease_duration_s:
            raise ValueError(
                "leader election needs retry period < renew deadline < lease duration, got "
                f"{self.retry_period_s:g} s, {self.renew_deadline_s:g} s, "
                f"{self.lease_duration_s:g} s"
            )
        return self


@dataclass(frozen=True)
class LeaseRecord:
    """The Lease's spec (``holderIdentity`` empty: released)."""

    holder: str
    lease_duration_s: int
    acquire_time: str | None
    renew_time: str | None
    transitions: int

    def to_spec(self) -> dict[str, object]:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_s,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }

    @classmethod
    def from_spec(cls, spec: dict[str, object]) -> "LeaseRecord":
        duration = spec.get("leaseDurationSeconds")
        transitions = spec.get("leaseTransitions")
        acquire, renew = spec.get("acquireTime"), spec.get("renewTime")
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            lease_duration_s=duration if isinstance(duration, int) else 0,
            acquire_time=str(acquire) if acquire else None,
            renew_time=str(renew) if renew else None,
            transitions=transitions if isinstance(transitions, int) else 0,
        )


@dataclass(frozen=True)
class Observed:
    """The Lease as read (None: it does not exist) and its ``resourceVersion``."""

    record: LeaseRecord | None
    resource_version: str | None = None


@dataclass(frozen=True)
class Memory:
    """What a candidate remembers between steps (starts empty)."""

    last_record: LeaseRecord | None = None
    record_seen_at_s: float | None = None
    """Our clock when ``last_record`` was first seen: expiry is measured from here."""
    renewed_at_s: float | None = None
    """Our clock at our last successful write as holder."""


Action = Literal["create", "take", "renew", "wait"]


@dataclass(frozen=True)
class Step:
    action: Action
    write: LeaseRecord | None
    """The record to write (create or replace, conditional on the version read)."""
    memory: Memory
    why: str


def step(config: ElectionConfig, now_s: float, stamp: str, observed: Observed, mem: Memory) -> Step:
    """One attempt: what to write, given the Lease as just read."""
    duration = max(1, round(config.lease_duration_s))
    record = observed.record
    if record is None:
        mine = LeaseRecord(config.identity, duration, stamp, stamp, 0)
        return Step("create", mine, mem, "no Lease yet")
    seen_at = mem.record_seen_at_s
    if record != mem.last_record or seen_at is None:
        seen_at = now_s
    mem = replace(mem, last_record=record, record_seen_at_s=seen_at)
    if record.holder == config.identity:
        renewed = replace(record, renew_time=stamp, lease_duration_s=duration)
        return Step("renew", renewed, mem, "we hold it")
    mem = replace(mem, renewed_at_s=None)  # another holds it: whatever we led has ended
    expires = seen_at + max(record.lease_duration_s, 1)
    if not record.holder or now_s >= expires:
        taken = LeaseRecord(config.identity, duration, stamp, stamp, record.transitions + 1)
        why = "released" if not record.holder else f"{record.holder} stopped renewing"
        return Step("take", taken, mem, why)
    return Step("wait", None, mem, f"{record.holder} holds it")


def wrote(mem: Memory, now_s: float, record: LeaseRecord) -> Memory:
    """After a successful write: we lead from ``now_s`` and know the record we wrote."""
    return Memory(last_record=record, record_seen_at_s=now_s, renewed_at_s=now_s)


def lost_write(mem: Memory) -> Memory:
    """After a refused write (409: someone else wrote first): forget the record so the next
    read is taken as new; our lead, if any, still runs out at its renew deadline."""
    return replace(mem, last_record=None, record_seen_at_s=None)


def leading(config: ElectionConfig, mem: Memory, now_s: float) -> bool:
    """True while our last successful renewal is younger than the renew deadline."""
    return mem.renewed_at_s is not None and now_s - mem.renewed_at_s < config.renew_deadline_s


def release(record: LeaseRecord, identity: str, stamp: str) -> LeaseRecord | None:
    """The record that hands the Lease back on a clean stop (None: it is not ours)."""
    if record.holder != identity:
        return None
    return replace(record, holder="", lease_duration_s=1, renew_time=stamp)
