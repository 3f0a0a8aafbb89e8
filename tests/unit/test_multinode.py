"""Multi-node layouts: the plan's layout fields, the fabric figures, the LeaderWorkerSet render."""

from tests.helpers import EXAMPLES
from tokenscale.api.manifest import parse_manifests
from tokenscale.planning import plan_service


def test_single_node_plans_keep_the_single_node_layout() -> None:
    for example in EXAMPLES:
        service = parse_manifests(example.read_text())[0]
        plan = plan_service(service.spec)
        assert plan.pipeline_parallel_size == 1
        assert plan.data_parallel_size == 1
        assert not plan.expert_parallel
        assert plan.nodes_per_replica == 1
        assert plan.gpus_per_replica == plan.tensor_parallel_size
        data = plan.model_dump(mode="json")
        for key in (
            "pipeline_parallel_size",
            "data_parallel_size",
            "expert_parallel",
            "nodes_per_replica",
            "gpus_per_replica",
        ):
            assert key in data
