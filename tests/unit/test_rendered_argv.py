"""The argv each rendered vLLM container runs, as Kubernetes and the pod's shell build it
(``tests/support/vllm_args.py``): no variable is left unexpanded, the LeaderWorkerSet worker's
shell computes its start rank. vLLM's own parser runs on the same argvs in
``tests/integration/test_vllm_args.py`` (marker ``vllm_args``)."""

import pytest

from tests.support.vllm_args import CommandLine, command_lines, k8s_expand, serve_argv


@pytest.fixture(scope="module")
def lines() -> list[CommandLine]:
    return command_lines()


def test_no_rendered_argv_keeps_an_unexpanded_variable(lines: list[CommandLine]) -> None:
    left = [f"{line.where}: {word}" for line in lines for word in line.argv if "$" in word]
    assert not left, "vLLM would receive these literally:\n" + "\n".join(left)


def test_the_model_is_the_positional_argument(lines: list[CommandLine]) -> None:
    rendered = [line for line in lines if line.source.startswith(("render", "tests/golden"))]
    assert rendered
    for line in rendered:
        assert not line.argv[0].startswith("-"), line.where
        assert "--model" not in line.argv, line.where


def test_the_data_parallel_worker_gets_its_start_rank_and_the_leaders_address(
    lines: list[CommandLine],
) -> None:
    workers = [line for line in lines if "--data-parallel-start-rank" in line.argv]
    assert workers
    for line in workers:
        argv = list(line.argv)
        local = int(argv[argv.index("--data-parallel-size-local") + 1])
        assert argv[argv.index("--data-parallel-start-rank") + 1] == str(local)  # worker 1
        assert argv[argv.index("--data-parallel-address") + 1] == "svc-0.svc.inference"


def test_kubernetes_expansion() -> None:
    env = {"A": "x", "B": "y"}
    assert k8s_expand("$(A)-$(B)", env) == "x-y"
    assert k8s_expand("$(C)", env) == "$(C)"  # undefined: left as written
    assert k8s_expand("$$(A)", env) == "$(A)"  # escaped
    assert k8s_expand("${A}", env) == "${A}"  # not Kubernetes syntax


def test_a_container_that_does_not_run_vllm_has_no_argv() -> None:
    assert serve_argv({"name": "x", "command": ["python3", "-c", "pass"]}, None) is None
