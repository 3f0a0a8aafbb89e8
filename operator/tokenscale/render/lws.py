"""A replica that spans nodes: one LeaderWorkerSet group per replica.

``spec.replicas`` counts groups (replicas), ``leaderWorkerTemplate.size`` is the nodes one
replica spans; the LWS controller creates the leader pod ``<name>-<group>`` and the workers
``<name>-<group>-<index>`` and injects ``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE`` and
``LWS_WORKER_INDEX`` (0 on the leader) into every container.

How the pods become one vLLM server. vLLM documents two multi-node launches: a Ray cluster
(``examples/online_serving/multi-node-serving.sh``: ``leader --ray_cluster_size=…`` then
``vllm serve``; ``worker --ray_address=…``), and, since the V1 engine, its own
multiprocessing launch (docs ``serving/parallelism_scaling.md``, "Running vLLM with
MultiProcessing": every node runs ``vllm serve`` with the same TP/PP and ``--nnodes N
--node-rank R --master-addr <head>``, the non-head nodes with ``--headless``). Data-parallel
(expert-parallel MoE) deployments have their own documented flags (``serving/
data_parallel_deployment.md``): ``--data-parallel-size``, ``--data-parallel-size-local``,
``--data-parallel-address``, ``--data-parallel-rpc-port``, and on the other nodes
``--data-parallel-start-rank`` with ``--headless``.

We use vLLM's own launch, not Ray: the operator targets vLLM 0.33 images (the native launch
exists there), it is the same ``vllm serve`` the single-node Deployment runs (same flags, same
``/health`` and ``/metrics``), it needs no second process tree whose failure the pod would not
notice (a Ray head can outlive a dead engine), and LWS's leader address and worker index map
one-to-one onto ``--master-addr``/``--node-rank``. Ray remains possible through
``serving.extraArgs`` and ``deployment`` overrides for images that need it.

Only the leader serves the API and ``/metrics``: it alone carries the ``http`` port, the
probes and the scrape annotations, and the Service selects it by ``tokenscale.io/role``.
A worker that dies restarts its whole group (``RecreateGroupOnPodRestart``): a vLLM engine
cannot rejoin a running one.
"""

import copy
import math
from typing import Any

from tokenscale.planning.result import Plan
from tokenscale.render.labels import (
    CONFIG_HASH_ANNOTATION,
    ROLE_LABEL,
    workload_labels,
)
from tokenscale.render.names import child_name

LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
LWS_KIND = "LeaderWorkerSet"
#: ``--data-parallel-rpc-port``: where the head's coordinator listens for the other nodes.
DP_RPC_PORT = 13345
_SCRAPE = ("prometheus.io/scrape", "prometheus.io/port", "prometheus.io/path")


def _launch_flags(plan: Plan, leader: bool) -> tuple[list[str], str | None]:
    """Flags that wire a pod into its replica, and (for DP workers) a shell tail that needs
    arithmetic Kubernetes' ``$(VAR)`` expansion cannot do."""
    nodes = plan.nodes_per_replica
    if plan.data_parallel_size > 1:
        if plan.pipeline_parallel_size > 1:
            raise ValueError("a layout with both pipeline and data parallelism is not rendered")
        local = plan.data_parallel_size // nodes
        flags = [
            "--data-parallel-size-local",
            str(local),
            "--data-parallel-address",
            "$(LWS_LEADER_ADDRESS)",
            "--data-parallel-rpc-port",
            str(DP_RPC_PORT),
        ]
        if leader:
            return flags, None
        return [*flags, "--headless"], f"--data-parallel-start-rank $((LWS_WORKER_INDEX * {local}))"
    flags = ["--nnodes", str(nodes), "--node-rank", "$(LWS_WORKER_INDEX)"]
    flags += ["--master-addr", "$(LWS_LEADER_ADDRESS)"]
    return (flags if leader else [*flags, "--headless"]), None


def _role_template(template: dict[str, Any], plan: Plan, leader: bool) -> dict[str, Any]:
    """The leader or worker pod template from the single-node pod template."""
    out = copy.deepcopy(template)
    role = "leader" if leader else "worker"
    out["metadata"]["labels"][ROLE_LABEL] = role
    container = out["spec"]["containers"][0]
    flags, shell_tail = _launch_flags(plan, leader)
    args = [*container["args"], *flags]
    if shell_tail is not None:
        # sh expands $((…)); "$@" passes every other argument as Kubernetes expanded it (its
        # $(LWS_LEADER_ADDRESS) included: the shell does not expand the words of "$@" again)
        container["command"] = ["/bin/sh", "-c", f'exec vllm serve "$@" {shell_tail}', "vllm"]
    container["args"] = args
    if not leader:
        # no API on a worker: no port, probes or drain hook (the leader drains the group)
        for key in ("ports", "startupProbe", "readinessProbe", "livenessProbe", "lifecycle"):
            container.pop(key, None)
        annotations = out["metadata"]["annotations"]
        for key in _SCRAPE:
            annotations.pop(key, None)
    return out


def _hashed(template: dict[str, Any], config_hash: str) -> dict[str, Any]:
    meta = template["metadata"]
    return {
        "metadata": {
            "labels": meta["labels"],
            "annotations": {**meta["annotations"], CONFIG_HASH_ANNOTATION: config_hash},
        },
        "spec": template["spec"],
    }


def lws_templates(template: dict[str, Any], plan: Plan) -> dict[str, dict[str, Any]]:
    """Leader and worker pod templates (without the hash annotation, which is computed over
    both)."""
    return {
        "leader": _role_template(template, plan, leader=True),
        "worker": _role_template(template, plan, leader=False),
    }


def leader_worker_set(
    name: str,
    namespace: str,
    replicas: int,
    plan: Plan,
    templates: dict[str, dict[str, Any]],
    config_hash: str,
) -> dict[str, Any]:
    """The LeaderWorkerSet: ``replicas`` groups of ``nodes_per_replica`` pods."""
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": LWS_KIND,
        "metadata": {
            "name": child_name(name),
            "namespace": namespace,
            "labels": workload_labels(name, templates["leader"]["metadata"]["labels"]),
            "annotations": {CONFIG_HASH_ANNOTATION: config_hash},
        },
        "spec": {
            "replicas": replicas,
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                # like the Deployment: bring a new group up before an old one goes
                "rollingUpdateConfiguration": {"maxUnavailable": 0, "maxSurge": 1},
            },
            "leaderWorkerTemplate": {
                "size": plan.nodes_per_replica,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": _hashed(templates["leader"], config_hash),
                "workerTemplate": _hashed(templates["worker"], config_hash),
            },
        },
    }


def group_pdb_max_unavailable(replicas: int, needed: float) -> int:
    """Pods a voluntary disruption may take from a multi-node fleet: the headroom in groups.

    Evicting any pod restarts its whole group (all its pods turn unready), so a budget of k
    unavailable pods lets at most k groups be down at once and blocks further evictions until
    a restarted group is Ready again. The headroom is ``replicas − ceil(needed)`` groups, at
    least one (so node drains proceed: one group at a time) and never all of them."""
    if replicas <= 1:
        return 1
    headroom = replicas - max(1, math.ceil(needed - 1e-9))
    return max(1, min(headroom, replicas - 1))
