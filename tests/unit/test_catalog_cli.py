"""`tokenscale catalog` (HF ids, -o json), the catalog's new entries, and the warning when a
catalog entry is applied to a model it does not name."""

import json

import pytest
from typer.testing import CliRunner

from tests.helpers import spec
from tokenscale.catalog import GPU_CATALOG, MODEL_CATALOG, count_params
from tokenscale.catalog.models import find_model
from tokenscale.cli.app import app
from tokenscale.planning import plan_service
from tokenscale.planning.memory import kv_geometry
from tokenscale.planning.name_check import name_mismatch_warning

runner = CliRunner()

ISSUE_GPUS = {
    "A100-PCIE-80GB",
    "H100-NVL-94GB",
    "GH200-96GB",
    "H20-96GB",
    "L40-48GB",
    "MI325X-256GB",
}
ISSUE_MODELS = {
    "qwen3-8b",
    "qwen3-30b-a3b",
    "qwen2.5-14b",
    "qwen2.5-32b",
    "mistral-7b-v0.3",
    "mistral-small-24b",
    "gemma-2-27b",
    "gemma-3-27b",
    "phi-3-mini-4k",
    "phi-4",
    "llama-3.2-3b",
}


def test_the_issue_list_is_in_the_catalog() -> None:
    assert set(GPU_CATALOG) >= ISSUE_GPUS
    assert set(MODEL_CATALOG) >= ISSUE_MODELS
    moe = [
        k for k in MODEL_CATALOG if k.startswith("qwen3") and MODEL_CATALOG[k].architecture.experts
    ]
    dense = [
        k
        for k in MODEL_CATALOG
        if k.startswith("qwen3") and not MODEL_CATALOG[k].architecture.experts
    ]
    assert moe
    assert dense


def test_every_hf_id_finds_its_own_entry() -> None:
    for key, entry in MODEL_CATALOG.items():
        assert entry.aliases, key
        for alias in entry.aliases:
            found = find_model(alias)
            assert found is not None
            assert found.key == key, (alias, found.key)


def test_catalog_json_carries_ids_sources_and_counts() -> None:
    result = runner.invoke(app, ["catalog", "-o", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [g["key"] for g in data["gpus"]] == list(GPU_CATALOG)
    assert [m["key"] for m in data["models"]] == list(MODEL_CATALOG)
    for g in data["gpus"]:
        assert g["source"]
        assert g["memoryGiB"] == GPU_CATALOG[g["key"]].spec.memory_gib
    for m in data["models"]:
        assert m["hfIds"] == list(MODEL_CATALOG[m["key"]].aliases)
        assert m["params"] == count_params(MODEL_CATALOG[m["key"]].architecture).total
        assert m["source"]


def test_catalog_table_prints_the_hf_ids_within_the_terminal() -> None:
    result = runner.invoke(app, ["catalog"], env={"COLUMNS": "100"})
    assert result.exit_code == 0
    assert "mistralai/Mistral-7B-Instruct-v0.3" in result.output
    assert "sources" in result.output
    assert max(len(line.rstrip()) for line in result.output.splitlines()) <= 100


@pytest.mark.parametrize("key", ["gemma-2-27b", "gemma-3-27b", "phi-3-mini-4k"])
def test_sliding_windows_cap_the_kv_of_long_contexts(key: str) -> None:
    arch = MODEL_CATALOG[key].architecture
    geometry = kv_geometry(arch, 2.0, 1)
    long = 4 * (arch.sliding_window or 0)
    assert geometry.bytes_for_context(long) < geometry.bytes_per_token * long


def test_a_v01_entry_named_v03_warns_with_the_difference() -> None:
    s = spec(model={"name": "mistralai/Mistral-7B-Instruct-v0.3", "catalog": "mistral-7b-v0.1"})
    text = name_mismatch_warning(s)
    assert text is not None
    assert "is catalog mistral-7b-v0.3" in text
    assert "slidingWindow 4,096 vs none" in text
    assert "vocabSize 32,000 vs 32,768" in text
    assert "KV per P99 request" in text
    assert text in plan_service(s).warnings


def test_a_matching_name_or_an_unknown_one() -> None:
    assert name_mismatch_warning(spec()) is None
    unknown = name_mismatch_warning(
        spec(model={"name": "acme/my-llama", "catalog": "llama-3.1-8b"})
    )
    assert unknown is not None
    assert "check that they are the served model's" in unknown
    by_name = spec(model={"name": "mistralai/Mistral-7B-Instruct-v0.3", "catalog": None})
    assert name_mismatch_warning(by_name) is None


def test_new_gpus_plan() -> None:
    for gpu in sorted(ISSUE_GPUS):
        s = spec(hardware={"gpu": gpu, "tensorParallelSize": "auto"})
        p = plan_service(s)
        assert p.gpu == gpu
        assert p.kv_capacity_blocks_per_replica > 0, gpu
