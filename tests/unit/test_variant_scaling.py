"""Scale order across GPU variants (cheapest capacity up, dearest down) and the GPU quota."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenscale.scaling.quota import GpuQuota, gpus_left, quota_shortfall
from tokenscale.scaling.variant_order import VariantSlot, scale_variants

slot = st.builds(
    VariantSlot,
    name=st.just(""),
    cost_per_rps=st.floats(0.01, 10.0),
    replicas=st.integers(0, 8),
    max_replicas=st.integers(0, 10),
    gpus_per_replica=st.sampled_from([1, 2, 4]),
    resource=st.sampled_from(["nvidia.com/gpu", "amd.com/gpu"]),
)


def _named(slots: list[VariantSlot]) -> list[VariantSlot]:
    return [
        VariantSlot(
            f"v{i}", s.cost_per_rps, s.replicas, s.max_replicas, s.gpus_per_replica, s.resource
        )
        for i, s in enumerate(slots)
    ]


@settings(max_examples=300, deadline=None)
@given(
    slots=st.lists(slot, min_size=1, max_size=4),
    target=st.integers(0, 40),
    nvidia_left=st.one_of(st.none(), st.integers(0, 30)),
)
def test_counts_respect_every_bound_and_follow_the_cost_order(
    slots: list[VariantSlot], target: int, nvidia_left: int | None
) -> None:
    slots = _named(slots)
    budget = {} if nvidia_left is None else {"nvidia.com/gpu": nvidia_left}
    out = scale_variants(slots, target, budget)
    c = out.counts
    for s in slots:
        assert 0 <= c[s.name] <= max(s.max_replicas, 0)
    if nvidia_left is not None:
        held = sum(c[s.name] * s.gpus_per_replica for s in slots if s.resource == "nvidia.com/gpu")
        assert held <= nvidia_left
    assert sum(c.values()) <= target
    if out.unplaced == 0:
        assert sum(c.values()) == target
    else:  # replicas left unplaced: no variant had room for one more
        assert sum(c.values()) + out.unplaced == target
        for s in slots:
            full = c[s.name] >= s.max_replicas
            quota = nvidia_left is not None and s.resource == "nvidia.com/gpu"
            if quota:
                held = sum(
                    c[x.name] * x.gpus_per_replica for x in slots if x.resource == s.resource
                )
                full = full or held + s.gpus_per_replica > nvidia_left  # type: ignore[operator]
            assert full
    order = sorted(range(len(slots)), key=lambda i: (slots[i].cost_per_rps, i))
    start = {s.name: min(s.replicas, s.max_replicas) for s in slots}
    if target >= sum(start.values()) and nvidia_left is None:
        # up: a dearer variant grows only when every cheaper one is full
        for a, i in enumerate(order):
            if c[slots[i].name] > start[slots[i].name]:
                for j in order[:a]:
                    assert c[slots[j].name] == slots[j].max_replicas
    if target <= sum(start.values()) and nvidia_left is None:
        # down: a cheaper variant shrinks only when every dearer one is empty
        for a, i in enumerate(order):
            if c[slots[i].name] < start[slots[i].name]:
                for j in order[a + 1 :]:
                    assert c[slots[j].name] == 0


def test_up_on_the_cheapest_capacity_down_on_the_dearest() -> None:
    h100 = VariantSlot("h100", cost_per_rps=0.141, replicas=2, max_replicas=4)
    l40s = VariantSlot("l40s", cost_per_rps=0.173, replicas=3, max_replicas=24)
    up = scale_variants([h100, l40s], 9)
    assert up.counts == {"h100": 4, "l40s": 5}
    assert up.reason == "+2 h100, +2 l40s"
    down = scale_variants([h100, l40s], 1)
    assert down.counts == {"h100": 1, "l40s": 0}
    assert down.reason == "-3 l40s, -1 h100"


def test_an_exhausted_variant_takes_no_more_and_the_need_moves_on() -> None:
    h100 = VariantSlot("h100", 0.141, replicas=2, max_replicas=2)  # exhausted at what it runs
    l40s = VariantSlot("l40s", 0.173, replicas=0, max_replicas=24)
    out = scale_variants([h100, l40s], 5)
    assert out.counts == {"h100": 2, "l40s": 3}


def test_the_quota_caps_the_scale_up_and_says_how_many_are_unplaced() -> None:
    h100 = VariantSlot("h100", 0.141, replicas=0, max_replicas=4, gpus_per_replica=2)
    l40s = VariantSlot("l40s", 0.173, replicas=0, max_replicas=24)
    out = scale_variants([h100, l40s], 6, {"nvidia.com/gpu": 7})
    # 3 H100 replicas × 2 = 6 GPUs, then 1 L40S: 7 GPUs; 2 replicas find no room
    assert out.counts == {"h100": 3, "l40s": 1}
    assert out.unplaced == 2
    assert "no room" in out.reason
    lowered = scale_variants(
        [VariantSlot("h100", 0.141, 3, 4, 2), VariantSlot("l40s", 0.173, 2, 24)],
        5,
        {"nvidia.com/gpu": 4},
    )
    held = lowered.counts["h100"] * 2 + lowered.counts["l40s"]
    assert held <= 4
    assert "(quota)" in lowered.reason


def test_gpus_left_takes_the_tightest_quota_and_counts_our_own_back() -> None:
    quotas = [
        GpuQuota("team", {"requests.nvidia.com/gpu": 16}, {"requests.nvidia.com/gpu": 10}),
        GpuQuota("tight", {"requests.nvidia.com/gpu": 12}, {"requests.nvidia.com/gpu": 10}),
        GpuQuota("cpu-only", {"requests.cpu": 100}, {}),
    ]
    left, why = gpus_left(quotas, "nvidia.com/gpu", held=4)
    assert left == 2 + 4
    assert "tight" in why
    assert gpus_left(quotas, "amd.com/gpu", held=0)[0] is None
    assert quota_shortfall(9, 6, "nvidia.com/gpu") == (
        "quota-limited: 9 nvidia.com/gpu wanted, 6 allowed (3 short)"
    )
    assert quota_shortfall(6, 6, "nvidia.com/gpu") is None
    assert quota_shortfall(6, None, "nvidia.com/gpu") is None


@settings(max_examples=300, deadline=None)
@given(
    hard=st.integers(0, 40),
    others=st.integers(0, 40),
    counted=st.integers(0, 20),
    created_between=st.integers(0, 10),
)
def test_room_is_never_counted_twice(
    hard: int, others: int, counted: int, created_between: int
) -> None:
    """The pods are read before the quota: ours in ``used`` are ``counted`` plus those
    created between the two reads (in ``used``, not in ``held``). What is left never exceeds
    the quota's room for this service, and falls short of it by at most the pods created
    between the reads."""
    used = others + counted + created_between
    quotas = [GpuQuota("q", {"requests.nvidia.com/gpu": hard}, {"requests.nvidia.com/gpu": used})]
    left, _ = gpus_left(quotas, "nvidia.com/gpu", held=counted)
    assert left is not None
    room = max(0, hard - others)
    assert left <= room
    assert left >= room - created_between


def test_a_quota_without_status_is_not_room_plus_what_the_service_holds() -> None:
    """A quota the quota controller has not filled in (nothing ``used``) leaves ``hard``,
    however many GPUs the service's pods hold: before the clamp it left ``hard + held``, and a
    mix grew by what it held on every reconcile."""
    quotas = [GpuQuota("fresh", {"requests.nvidia.com/gpu": 7}, {})]
    for held in (0, 7, 10):
        assert gpus_left(quotas, "nvidia.com/gpu", held)[0] == 7
    # a pod created after the quota was read (held ahead of used) is not room either
    ahead = [GpuQuota("q", {"requests.nvidia.com/gpu": 7}, {"requests.nvidia.com/gpu": 5})]
    assert gpus_left(ahead, "nvidia.com/gpu", held=7)[0] == 7
    # a lowered quota: others' 4 fill the 4 allowed, the service's 6 have nowhere to stay
    lowered = [GpuQuota("q", {"requests.nvidia.com/gpu": 4}, {"requests.nvidia.com/gpu": 10})]
    assert gpus_left(lowered, "nvidia.com/gpu", held=6)[0] == 0
