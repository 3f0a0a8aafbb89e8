"""The playground's prefill/decode service: twins per role behind the P/D router (the llm-d
routing sidecar's job), and a headless run of the whole loop in which both roles scale."""

import asyncio
import itertools
import os
from pathlib import Path

import aiohttp
import pytest

from tokenscale.bench.client import Endpoint, stream_one
from tokenscale.playground.engine import ModelClock, TwinDriver, TwinEngine
from tokenscale.playground.load import shaped_trace
from tokenscale.playground.pd_router import RolesRouter
from tokenscale.playground.processes import free_port, port_in_use
from tokenscale.playground.service import (
    PD_SPEC,
    PlaygroundService,
    default_spec_path,
    load_service,
    spec_mix,
)
from tokenscale.playground.session import Playground, PlaygroundOptions
from tokenscale.playground.twin import Twin

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def service() -> PlaygroundService:
    return load_service(default_spec_path(PD_SPEC).read_text(), "pd")


def test_the_pd_spec_plans_two_pools_and_their_transfer(service: PlaygroundService) -> None:
    assert service.disaggregated
    assert set(service.roles) == {"prefill", "decode"}
    assert service.transfer_s is not None
    # a longer prompt moves more KV over the fabric
    assert 0 < service.transfer_s(1000) < service.transfer_s(8000)


def test_a_request_is_prefilled_on_one_twin_and_decoded_on_another_after_the_transfer(
    service: PlaygroundService,
) -> None:
    """The router sends the prompt to the prefill twin as a one-token request and its decode,
    with the KV-transfer parameters the prefill twin returned, to the decode twin, which waits
    the modelled transfer and admits the prompt's KV as computed: the decode engine prefills
    nothing, the prefill engine generates one token, and the client's first token comes after
    the prefill, the transfer and a decode step."""
    speed = 5.0
    prompt_tokens, answer_tokens = 4000, 20
    assert service.transfer_s is not None
    transfer = service.transfer_s(prompt_tokens)

    async def main() -> tuple[float, TwinEngine, TwinEngine, RolesRouter]:
        clock = ModelClock(speed)
        driver = TwinDriver(clock)
        driver.start()
        engines = {
            role: TwinEngine(service.roles[role], clock, driver.kick)
            for role in ("prefill", "decode")
        }
        twins = {
            "prefill": Twin(engines["prefill"], service.identity, free_port()),
            "decode": Twin(engines["decode"], service.identity, free_port(), service.transfer_s),
        }
        router = await RolesRouter(free_port()).start()
        for role, twin in twins.items():
            driver.engines.add(twin.engine)
            await twin.start()
            router.pools[role].add(twin)
        try:
            async with aiohttp.ClientSession() as session:
                ep = Endpoint(router.url, service.identity.model, 60.0, overhead_tokens=1)
                rec = await stream_one(session, ep, prompt_tokens, answer_tokens, 1)
            assert rec.ok, rec.error
            assert rec.output_tokens == answer_tokens
            assert rec.ttft_s is not None
            return rec.ttft_s * speed, engines["prefill"], engines["decode"], router
        finally:
            for twin in twins.values():
                await twin.stop()
            await router.stop()
            await driver.stop()

    ttft, prefill, decode, router = asyncio.run(main())
    assert (router.prefills, router.decodes) == (1, 1)
    # the prefill engine prefilled the prompt and generated its one token
    assert prefill.rec.prompt_tokens >= prompt_tokens
    assert prefill.rec.generation_tokens == 1
    assert prefill.rec.success == 1
    # the decode engine generated the answer on the transferred KV, prefilling (almost) nothing
    assert decode.rec.generation_tokens == answer_tokens
    assert decode.rec.success == 1
    assert decode.rec.outcomes[0].output_tokens == answer_tokens
    own = service.roles["prefill"].perf.prefill_seconds(prompt_tokens)
    # the client's first token: at least the prefill and the transfer (modelled seconds)
    assert ttft >= own + transfer
    # the decode engine's own TTFT counts from the request's arrival there (the transfer
    # included) and holds no prefill of the prompt: its KV came computed
    assert transfer <= decode.rec.outcomes[0].ttft_s < own / 2


@pytest.mark.slow  # a whole headless P/D playground run, ≈70 s: `pytest -m slow`
def test_playground_pd_scales_each_role_and_leaves_nothing_running(
    service: PlaygroundService, tmp_path: Path
) -> None:
    """A step in the spec's own long prompts (0.5 → 3 → 0.5 RPS over 10 modelled minutes) at
    ×20: the operator scales the prefill Deployment and the decode Deployment, each on its own
    twins' series (``role`` label), and every request is served through the P/D router."""
    trace = shaped_trace("step", 600.0, 0.5, 3.0, seed=1, mix=spec_mix(service))
    opts = PlaygroundOptions(
        service=service, trace=trace, workdir=tmp_path / "pg", speed=20.0, settle_s=60.0
    )
    notes: list[str] = []
    pg = Playground(opts, notes.append)
    try:
        pg.start_infrastructure()
        result = asyncio.run(pg.run())
    finally:
        pg.stop()
    print("\n".join(notes))
    for t, frames in result.role_timeline[::10]:
        print(f"{t:6.0f} s  " + "  ".join(f"{r} {f}" for r, f in frames.items()))
    ups = {
        role: [e for e in result.events if e.message.startswith(f"Scaled {role} ") and _up(e)]
        for role in ("prefill", "decode")
    }
    assert ups["prefill"], [e.message for e in result.events]
    assert ups["decode"], [e.message for e in result.events]
    peak = {
        role: max(f[role].ready for _, f in result.role_timeline) for role in ("prefill", "decode")
    }
    assert peak["prefill"] >= 2
    assert peak["decode"] >= 2
    # each role's decisions, from status.roles, on the load's modelled clock: one per decision
    # interval, and the scale-ups among them
    for role in ("prefill", "decode"):
        decided = result.role_decisions[role]
        assert len(decided) >= 10, role
        assert any(d.replicas >= 2 for d in decided), role
        assert all(b.t_s > a.t_s for a, b in itertools.pairwise(decided)), role
    assert result.completed >= 0.95 * result.sent
    for pid in result.pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not [p for p in result.ports if port_in_use(p)]


def _up(event: object) -> bool:
    """``Scaled prefill Deployment x-prefill 1→2: …`` goes up."""
    head = str(getattr(event, "message", "")).split(":", 1)[0]
    before, _, after = head.rpartition(" ")[2].partition("→")
    try:
        return int(after) > int(before)
    except ValueError:
        return False
