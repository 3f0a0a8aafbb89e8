"""The playground's pieces that need no server: token release timing, the speed-scaled
manifest, the synthetic loads and the command's input errors."""

import pytest
from typer.testing import CliRunner

from tokenscale.cli.app import app
from tokenscale.playground.engine import ModelClock, Stream, TwinEngine, prompt_blocks
from tokenscale.playground.load import shaped_trace, shared_prefix_prompt
from tokenscale.playground.service import PD_SPEC, default_spec_path, load_service, spec_mix
from tokenscale.playground.session import DecisionPoint, PlaygroundResult, RoleFrame
from tokenscale.playground.summary import gpu_hours_until, role_summary
from tokenscale.simulation.replica import SimRequest
from tokenscale.simulation.trace import TraceRequest, window_rates


def test_tokens_are_released_at_their_modelled_times() -> None:
    req = SimRequest(0.0, 10, 5)
    stream = Stream(req)
    # the engine produced the first token at 1.0 s and three more by 1.3 s
    req.generated, req.first_token_s, req.last_token_s = 4, 1.0, 1.3
    stream.learn()
    assert not stream.release(0.99)
    assert stream.next_due() == pytest.approx(1.0)
    assert stream.release(1.0)
    assert stream.released == 1
    assert stream.next_due() == pytest.approx(1.1)
    stream.release(1.21)
    assert stream.released == 3
    stream.release(5.0)
    assert stream.released == 4
    assert not stream.done
    req.generated, req.last_token_s = 5, 1.4
    stream.learn()
    stream.release(1.4)
    assert stream.done


def test_the_applied_manifest_keeps_the_windows_in_modelled_seconds() -> None:
    service = load_service(default_spec_path().read_text(), "default")
    body = service.applied_manifest("playground")
    assert body["metadata"] == {"name": service.name, "namespace": "playground"}
    window = service.spec.scaling.policy.scale_down_stabilization_seconds
    assert body["spec"]["scaling"]["policy"]["scaleDownStabilizationSeconds"] == window
    assert service.manifest["spec"]["scaling"]["policy"]["scaleDownStabilizationSeconds"] == window
    assert service.engine.kv_blocks == service.plan.kv_capacity_blocks_per_replica


def test_the_default_spec_plans_a_small_fleet() -> None:
    service = load_service(default_spec_path().read_text(), "default")
    assert service.plan.feasible
    assert 1 <= service.plan.replicas.total <= 3
    assert service.spec.scaling.max_replicas <= 8


@pytest.mark.parametrize("shape", ["step", "ramp", "burst"])
def test_synthetic_loads_have_their_shape(shape: str) -> None:
    trace = shaped_trace(shape, 900.0, 0.5, 4.0, seed=2)
    rates = window_rates(trace, 15.0)  # 60 windows
    assert max(rates) > 2.0
    assert sum(rates[:4]) / 4 < 1.5  # starts low
    if shape == "step":
        assert sum(rates[20:40]) / 20 > 3 * sum(rates[:20]) / 20


def test_the_command_rejects_bad_inputs() -> None:
    runner = CliRunner()
    both = runner.invoke(app, ["playground", "--load", "step", "--trace", "x.csv"])
    assert both.exit_code == 2
    slow = runner.invoke(app, ["playground", "--speed", "0"])
    assert slow.exit_code == 2
    bad_kind = runner.invoke(app, ["playground", "--fault", "meteor@1:00"])
    assert bad_kind.exit_code == 2
    assert "replica-loss" in bad_kind.output  # names what is allowed
    bad_moment = runner.invoke(app, ["playground", "--fault", "replica-loss@soon"])
    assert bad_moment.exit_code == 2
    kept = runner.invoke(app, ["playground", "--fault", "replica-loss@1:00", "--keep"])
    assert kept.exit_code == 2
    two_specs = runner.invoke(app, ["playground", "--pd", "--spec", "x.yaml"])
    assert two_specs.exit_code == 2
    assert "--pd" in two_specs.output
    pd_to_zero = runner.invoke(app, ["playground", "--pd", "--load", "idle-burst"])
    assert pd_to_zero.exit_code == 2
    assert "idle-burst" in pd_to_zero.output


def test_a_pd_service_gets_a_step_load_of_its_own_lengths() -> None:
    """The bundled P/D spec plans two pools; its synthetic load draws the spec's long prompts
    (the one-pool loads' chat lengths would never load its prefill pool)."""
    service = load_service(default_spec_path(PD_SPEC).read_text(), "pd")
    assert service.disaggregated
    trace = shaped_trace("step", 900.0, 0.5, 3.0, seed=1, mix=spec_mix(service))
    chat = shaped_trace("step", 900.0, 0.5, 3.0, seed=1)
    mean_in = sum(r.input_tokens for r in trace.requests) / len(trace.requests)
    chat_in = sum(r.input_tokens for r in chat.requests) / len(chat.requests)
    assert mean_in == pytest.approx(service.spec.workload.input_tokens.mean, rel=0.15)
    assert chat_in < mean_in / 3


def test_shared_prefix_blocks_reach_the_twins_prefix_cache() -> None:
    a = TraceRequest(0.0, 1100, 5, (7, 8, 9))
    b = TraceRequest(0.0, 1100, 5, (7, 8, 10))
    c = TraceRequest(0.0, 1100, 5, (6, 8, 9))
    pa, pb, pc = (shared_prefix_prompt(r, i, 512).split() for i, r in enumerate((a, b, c)))
    assert len(pa) == 1100
    ha, hb, hc = (prompt_blocks(p, 512) for p in (pa, pb, pc))
    assert len(ha) == 2  # full blocks only
    assert ha == hb  # the same two leading blocks (the third is partial: unique words)
    assert ha[0] != hc[0]
    assert ha[1] != hc[1]  # chained: the same block after a different prefix does not match


def test_an_aborted_request_frees_its_kv_blocks() -> None:
    service = load_service(default_spec_path().read_text(), "default")
    engine = TwinEngine(service.engine, ModelClock(1.0))
    stream = engine.submit(3000, 200)
    engine.replica.run_until(engine.clock.now() + 5.0)  # prefilled, decoding
    assert engine.replica.free_blocks < service.engine.kv_blocks
    engine.abort(stream)
    assert engine.replica.free_blocks == service.engine.kv_blocks
    assert engine.replica.idle
    assert engine.aborted == 1


def test_a_pd_runs_gpu_hours_count_each_role_at_its_gpus() -> None:
    """Each role's ready and starting replicas at that role's GPUs per replica (a prefill pool
    at TP 2 beside a decode pool at TP 1), each sample's counts held until the next."""
    r = PlaygroundResult("s", 20.0, "t", 0, 0, 0, 0, 0, 0, 0, 0, 0, [], [], None, None, [], [])
    r.role_timeline = [
        (0.0, {"prefill": RoleFrame(1, 1, 0), "decode": RoleFrame(2, 2, 0)}),
        (3600.0, {"prefill": RoleFrame(2, 1, 1), "decode": RoleFrame(2, 2, 0)}),
    ]
    r.role_gpus = {"prefill": 2, "decode": 1}
    assert gpu_hours_until(r, 1800.0) == pytest.approx(0.5 * (2 * 2 + 2 * 1))
    assert role_summary(r)["prefill"]["replicas_max"] == 1


def test_a_pd_summary_reads_each_roles_minutes_from_its_decisions() -> None:
    """Each role's desired replicas at a minute's end are its last decision observed by then
    (as one pool's are), and the summary lists the decisions: the sampled Deployment count
    lags the decision that asked for it."""
    r = PlaygroundResult("s", 20.0, "t", 0, 0, 0, 0, 0, 0, 0, 0, 0, [], [], None, None, [], [])
    r.load_duration_s = 180.0
    r.role_timeline = [
        (30.0, {"prefill": RoleFrame(1, 1, 0), "decode": RoleFrame(2, 2, 0)}),
        (110.0, {"prefill": RoleFrame(1, 1, 0), "decode": RoleFrame(2, 2, 0)}),
        (170.0, {"prefill": RoleFrame(1, 1, 0), "decode": RoleFrame(3, 2, 1)}),
    ]
    r.role_decisions = {
        "decode": [DecisionPoint(20.0, 2, "hold 2"), DecisionPoint(100.0, 3, "scale up 2→3")],
        "prefill": [DecisionPoint(20.0, 1, "hold 1")],
    }
    roles = role_summary(r)
    decode = {m["minute"]: m["desired"] for m in roles["decode"]["timeline"]}
    assert decode == {0: 2, 1: 3, 2: 3}  # minute 1's sample still read 2
    assert [d["replicas"] for d in roles["decode"]["decisions"]] == [2, 3]
    assert [m["desired"] for m in roles["prefill"]["timeline"]] == [1, 1, 1]
