"""LoRA adapters: validation by field, the slots' memory against a hand computation, the swap
and slot models' invariants, the plan's ``lora{…}`` in every view, the rendered flags."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.helpers import manifest, spec
from tokenscale.api import InferenceService
from tokenscale.api.errors import SpecError
from tokenscale.api.lora import zipf_shares
from tokenscale.catalog.models import find_model
from tokenscale.cli.app import app
from tokenscale.cli.model_source import model_source_for
from tokenscale.controller.lora_config_ref import with_adapter_configs
from tokenscale.planning import plan_service
from tokenscale.planning.lora import (
    adapter_bytes,
    expected_distinct,
    lru_miss_fraction,
    slot_batch,
    slot_bytes_per_gpu,
)
from tokenscale.render import Owner, render_bundle

runner = CliRunner()


def adapters(count: int, rank: int = 16, **extra: Any) -> list[dict[str, Any]]:
    return [
        {"name": f"tenant-{i:03d}", "source": f"/adapters/tenant-{i:03d}", "rank": rank, **extra}
        for i in range(count)
    ]


def lora_spec(count: int, **lora: Any) -> Any:
    return spec(
        workload={"rps": {"mean": 20}},
        lora={"adapters": adapters(count), "zipfExponent": 1.0, **lora},
    )


# -- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("lora", "words"),
    [
        (
            {"maxLoraRank": 8, "adapters": adapters(1, 16)},
            "adapters[0].rank=16 exceeds maxLoraRank=8",
        ),
        (
            {"adapters": [*adapters(1), {"name": "tenant-000", "source": "org/x", "rank": 8}]},
            "adapters[1].name 'tenant-000' repeats adapters[0].name",
        ),
        (
            {"adapters": [*adapters(1, share=0.5), *adapters(2, share=0.4)[1:]]},
            "adapters[*].share sum to 0.9, not 1",
        ),
        ({"adapters": [*adapters(1, share=1.0), *adapters(2)[1:]]}, "adapters[1].share missing"),
        (
            {"adapters": adapters(2, share=0.5), "zipfExponent": 1.0},
            "share or zipfExponent, not both",
        ),
        ({"adapters": adapters(2), "maxLoras": 4, "maxCpuLoras": 2}, "maxCpuLoras=2 is below"),
        ({"adapters": adapters(1), "maxLoraRank": 12}, "maxLoraRank"),
        (
            {
                "adapters": [
                    {
                        "name": "a",
                        "source": "org/a",
                        "adapterConfig": {"r": 8},
                        "adapterConfigFile": "a.json",
                    }
                ]
            },
            "give one of adapterConfig, adapterConfigFile or adapterConfigRef",
        ),
        (
            {
                "adapters": [
                    {
                        "name": "a",
                        "source": "org/a",
                        "adapterConfig": {"r": 8, "base_model_name_or_path": "Qwen/Qwen2.5-7B"},
                    }
                ]
            },
            "spec.lora.adapters[0] (a): its adapter_config.json's base_model_name_or_path",
        ),
    ],
)
def test_bad_lora_input_exits_2_naming_the_field(
    tmp_path: Path, lora: dict[str, Any], words: str
) -> None:
    f = tmp_path / "svc.yaml"
    f.write_text(yaml.safe_dump(manifest(lora=lora)))
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2, result.output
    assert "spec" in result.output
    assert words in " ".join(result.output.split()), result.output


def test_a_rank_read_from_a_config_file_is_checked_against_max_lora_rank(tmp_path: Path) -> None:
    """A rank the spec's validators could not see (a file the CLI inlines) is refused by the
    planner, naming the adapter's field."""
    (tmp_path / "big.json").write_text(json.dumps({"r": 64, "target_modules": ["q_proj"]}))
    doc = manifest(
        lora={
            "maxLoraRank": 16,
            "adapters": [{"name": "big", "source": "org/big", "adapterConfigFile": "big.json"}],
        }
    )
    f = tmp_path / "svc.yaml"
    f.write_text(yaml.safe_dump(doc))
    service = model_source_for(f)(InferenceService.model_validate(doc))
    with pytest.raises(SpecError) as err:
        plan_service(service.spec, "svc")
    assert err.value.paths == ("spec.lora.adapters[0].rank",)
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2, result.output
    assert "spec.lora.adapters[0].rank" in result.output


def test_an_adapter_config_file_the_operator_cannot_read_names_its_field() -> None:
    """The operator reads no path: a file left for it (not inlined) is refused, with the fix."""
    s = spec(lora={"adapters": [{"name": "a", "source": "org/a", "adapterConfigFile": "a.json"}]})
    with pytest.raises(SpecError) as err:
        plan_service(s, "svc")
    assert err.value.paths == ("spec.lora.adapters[0].adapterConfigFile",)
    assert "adapterConfigRef" in str(err.value)


def test_an_unreadable_adapter_config_file_names_its_field(tmp_path: Path) -> None:
    doc = manifest(
        lora={"adapters": [{"name": "a", "source": "org/a", "adapterConfigFile": "nope.json"}]}
    )
    f = tmp_path / "svc.yaml"
    f.write_text(yaml.safe_dump(doc))
    result = runner.invoke(app, ["plan", str(f)])
    assert result.exit_code == 2, result.output
    assert "spec.lora.adapters[0].adapterConfigFile" in result.output


class _ConfigMaps:
    def __init__(self, maps: dict[str, dict[str, str]]) -> None:
        self.maps = maps

    def read_config_map(self, namespace: str, name: str) -> dict[str, Any] | None:
        data = self.maps.get(name)
        return None if data is None else {"data": data}


def test_an_adapter_config_ref_is_read_from_its_config_map() -> None:
    config = {"r": 8, "target_modules": ["q_proj", "v_proj"]}
    doc = manifest(
        lora={
            "adapters": [
                {"name": "a", "source": "org/a", "adapterConfigRef": {"configMapName": "a-cfg"}}
            ]
        }
    )
    service = InferenceService.model_validate(doc)
    kube = _ConfigMaps({"a-cfg": {"adapter_config.json": json.dumps(config)}})
    inlined = with_adapter_configs(kube, "ns", service)
    assert inlined.spec.lora is not None
    adapter = inlined.spec.lora.adapters[0]
    assert adapter.effective_rank == 8
    assert adapter.effective_target_modules == ["q_proj", "v_proj"]
    with pytest.raises(SpecError) as err:
        with_adapter_configs(_ConfigMaps({}), "ns", service)
    assert err.value.paths[0].startswith("spec.lora.adapters[0].adapterConfigRef")


# -- memory ----------------------------------------------------------------------------------
def test_slot_memory_matches_a_hand_computation_for_llama_3_1_8b() -> None:
    """Llama-3.1-8B: h 4096, 32 heads, 8 KV heads of 128, I 14336, 32 layers. Σ(in + out) over
    q, k, v, o, gate, up, down = 8192 + 5120 + 5120 + 8192 + 18432 × 3 = 81,920; at TP 2 the
    column modules halve their output and the row modules their input: 55,296."""
    entry = find_model("llama-3.1-8b")
    assert entry is not None
    arch = entry.architecture
    assert slot_bytes_per_gpu(arch, 16, 1) == 16 * 2 * 32 * 81_920 == 83_886_080
    assert slot_bytes_per_gpu(arch, 16, 2) == 16 * 2 * 32 * 55_296
    # an adapter on q and v only, rank 8: 8 × 2 B × 32 × (8192 + 5120)
    assert adapter_bytes(arch, 8, ["q_proj", "v_proj"]) == 8 * 2 * 32 * 13_312


def test_the_slots_come_out_of_the_kv_pool() -> None:
    with_lora = plan_service(lora_spec(10, maxLoras=8), "svc")
    without = plan_service(spec(workload={"rps": {"mean": 20}}), "svc")
    assert with_lora.lora is not None
    slots = 8 * 83_886_080
    shrink = 3 * with_lora.max_num_batched_tokens * 16 * 4
    # both peaks are the sampler's, which holds the forward's [T, 4096] 16-bit output: the
    # chunk budgets the two plans chose differ, and so does that output
    held = (with_lora.max_num_batched_tokens - without.max_num_batched_tokens) * 4096 * 2
    assert with_lora.memory_per_gpu.lora_bytes == slots
    drop = without.memory_per_gpu.kv_pool_bytes - with_lora.memory_per_gpu.kv_pool_bytes
    assert drop == pytest.approx(slots + shrink + held, abs=1.0)
    assert with_lora.lora.kv_pool_without_bytes == pytest.approx(
        without.memory_per_gpu.kv_pool_bytes
    )


# -- the swap and slot models ----------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(min_value=1, max_value=300),
    exponent=st.floats(min_value=0.0, max_value=2.5),
    smaller=st.integers(min_value=1, max_value=300),
    extra=st.integers(min_value=0, max_value=300),
)
def test_more_max_loras_never_more_swaps(
    count: int, exponent: float, smaller: int, extra: int
) -> None:
    shares = zipf_shares(count, exponent)
    few, many = lru_miss_fraction(shares, smaller), lru_miss_fraction(shares, smaller + extra)
    assert 0.0 <= many <= few + 1e-9 <= 1.0 + 1e-9
    if smaller + extra >= count:
        assert many == 0.0
    cap_few, cap_many = slot_batch(shares, smaller), slot_batch(shares, smaller + extra)
    if cap_few is not None:
        assert cap_many is None or cap_many >= cap_few - 1e-6
        assert expected_distinct(shares, cap_few, count) <= smaller + 1e-6


def test_uniform_traffic_misses_as_a_random_cache_would() -> None:
    """Equal shares: an LRU cache of m of n adapters misses (n − m)/n of requests."""
    assert lru_miss_fraction([0.01] * 100, 25) == pytest.approx(0.75, abs=1e-6)


# -- the plan --------------------------------------------------------------------------------
@pytest.mark.parametrize("count", [1, 10, 100])
def test_the_plan_says_what_the_adapters_cost(count: int) -> None:
    p = plan_service(lora_spec(count), "svc")
    assert p.feasible
    assert p.lora is not None
    e = p.lora
    assert e.adapters == count
    assert e.summary.startswith(f"{count} adapter")
    for words in ("KV pool −", "throughput at the operating batch", "swaps/s"):
        assert words in e.summary
    assert e.throughput_ratio < 1.0  # the kernels cost time
    assert 1 <= e.max_loras <= count
    assert [c.max_loras for c in e.compared][-1] == min(count, 128)
    if count > 1:  # vLLM's default of one slot holds back a many-adapter batch
        one = e.compared[0]
        assert one.max_loras == 1
        kept = next(c for c in e.compared if c.max_loras == e.max_loras)
        assert kept.rps_per_replica > one.rps_per_replica
        assert p.assumptions["operating_point_limited_by"] != "LoRA slots" or e.max_loras < count
    payload = json.loads(p.model_dump_json())
    assert payload["lora"]["max_loras"] == e.max_loras


@pytest.mark.parametrize("output", ["table", "wide", "short", "csv", "markdown", "json"])
def test_every_view_shows_lora(tmp_path: Path, output: str) -> None:
    f = tmp_path / "svc.yaml"
    doc = manifest(workload={"rps": {"mean": 20}}, lora={"adapters": adapters(10)})
    f.write_text(yaml.safe_dump(doc))
    result = runner.invoke(app, ["plan", str(f), "-o", output])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    if output == "json":
        body = json.loads(result.output)
        plan = body[0] if isinstance(body, list) else body
        assert plan["lora"]["adapters"] == 10
    else:
        assert "maxLoras" in text, text
        assert "10 adapters" in text or "lora 10×" in text, text


# -- render ----------------------------------------------------------------------------------
def _args(s: Any) -> tuple[list[str], str, dict[str, Any]]:
    p = plan_service(s, "svc")
    bundle = render_bundle("svc", "inference", s, p, 1, Owner("svc", "uid-1"))
    deployment = next(o for o in bundle.objects if o["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    return pod["containers"][0]["args"], bundle.config_hash, pod


def test_the_flags_follow_the_plan_and_the_adapters_mount_read_only() -> None:
    s = lora_spec(3, maxLoras=2, maxCpuLoras=3, adapterVolume={"claimName": "adapters"})
    args, _, pod = _args(s)
    at = args.index("--enable-lora")
    assert args[at : at + 10] == [
        "--enable-lora",
        "--max-loras",
        "2",
        "--max-lora-rank",
        "16",
        "--max-cpu-loras",
        "3",
        "--lora-modules",
        "tenant-000=/adapters/tenant-000",
        "tenant-001=/adapters/tenant-001",
    ]
    assert args[at + 10] == "tenant-002=/adapters/tenant-002"
    volume = next(v for v in pod["volumes"] if v["name"] == "lora-adapters")
    assert volume["persistentVolumeClaim"] == {"claimName": "adapters", "readOnly": True}
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "lora-adapters")
    assert mount == {"name": "lora-adapters", "mountPath": "/adapters", "readOnly": True}


def test_changing_the_adapter_list_changes_the_config_hash() -> None:
    _, before, _ = _args(lora_spec(3, maxLoras=2))
    _, same, _ = _args(lora_spec(3, maxLoras=2))
    _, after, _ = _args(lora_spec(4, maxLoras=2))
    assert before == same != after


def test_no_lora_renders_no_lora_flag() -> None:
    args, _, _ = _args(spec())
    assert not [a for a in args if "lora" in a]


@pytest.mark.parametrize("flag", ["--max-loras=4", "--enable-lora", "--lora-modules"])
def test_extra_args_cannot_override_the_lora_flags(flag: str) -> None:
    with pytest.raises(Exception, match=r"spec\.lora"):
        spec(serving={"extraArgs": [flag]})
