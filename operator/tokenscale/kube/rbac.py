"""Every API call the operator makes, as RBAC rules (the chart must grant exactly these).

Kept next to the code that makes the calls (kube/client.py, and kopf's own watching and
annotation patches); tests/unit/test_chart.py compares the chart's rendered roles with them.
"""

Rule = tuple[str, str, tuple[str, ...]]
"""(apiGroup, resource, verbs)"""

NAMESPACED: tuple[Rule, ...] = (
    ("tokenscale.io", "inferenceservices", ("get", "list", "watch", "create", "patch", "delete")),
    ("tokenscale.io", "inferenceservices/status", ("get", "update")),
    ("apps", "deployments", ("get", "list", "watch", "create", "patch", "delete")),
    (
        "leaderworkerset.x-k8s.io",
        "leaderworkersets",
        ("get", "list", "watch", "create", "patch", "delete"),
    ),
    ("", "services", ("get", "list", "watch", "create", "patch")),
    ("keda.sh", "scaledobjects", ("get", "create", "patch", "delete")),
    ("inference.networking.k8s.io", "inferencepools", ("get", "create", "patch")),
    ("llm-d.ai", "inferenceobjectives", ("get", "list", "create", "patch", "delete")),
    ("apps", "deployments/scale", ("get", "patch")),
    ("apps", "statefulsets", ("get",)),
    ("apps", "statefulsets/scale", ("get", "patch")),
    ("leaderworkerset.x-k8s.io", "leaderworkersets/scale", ("get", "patch")),
    ("policy", "poddisruptionbudgets", ("get", "list", "watch", "create", "patch")),
    ("", "events", ("create", "patch")),
    ("", "configmaps", ("get",)),
    ("", "pods", ("list", "watch", "patch")),
    ("", "resourcequotas", ("list", "watch")),
)
"""Reconcile: read/apply owned objects (server-side apply creates with create; a length
class's child InferenceService is one, deleted when its class is dropped), replace the
status whole, post events, read the ConfigMaps a ``spec.profileRef`` and a
``spec.model.hfConfigRef`` name (get only: the bench profile and the model's config.json), list
the Deployment's pods (their creation→Ready lead time) and set the vLLM pods' deletion cost
before a scale-down, list the namespace's ResourceQuotas (never ask for more GPUs than they
leave: controller/quota.py); kopf watches InferenceServices and the owned Deployments,
LeaderWorkerSets (kube/lws.py), Services, PodDisruptionBudgets, pods, and the ResourceQuotas
(the watch cache, kube/store.py, is primed by one list of each) and patches its annotations.
Delete: a service that moves between one node and many replaces its Deployment by a
LeaderWorkerSet or back (controller/workload.py). ScaledObjects (``spec.scaling.actuation:
keda``, kube/keda.py): read and applied, not watched, deleted when the mode changes away from
keda; with keda the workload's replicas are handed over by a server-side apply of
``spec.replicas`` alone (patch on the workload, already granted). InferencePools
(``spec.gateway.inferencePool.endpointPicker``, kube/inference_pool.py): read and applied, not
watched (the owner reference deletes them with the service). InferenceObjectives
(``spec.workload.classes`` with ``spec.gateway.inferencePool``, kube/inference_objective.py):
read and applied, listed by label to delete those of classes the spec dropped
(controller/objectives.py). ``spec.workloadRef``
(controller/workload_ref.py): get the referenced Deployment, StatefulSet or LeaderWorkerSet and
get/patch its ``/scale`` (the discovery documents it reads are open to every authenticated
user); a custom resource needs the same two grants from its owner's Role."""

CLUSTER_READ: tuple[Rule, ...] = (
    ("apiextensions.k8s.io", "customresourcedefinitions", ("get", "list", "watch")),
)
"""kopf watches CRDs to discover the resources it serves (namespaced mode too)."""

ALL_NAMESPACES: tuple[Rule, ...] = (("", "namespaces", ("get", "list", "watch")),)
"""kopf tracks namespaces when it watches all of them."""

LEADER_ELECTION: tuple[Rule, ...] = (
    ("coordination.k8s.io", "leases", ("get", "list", "create", "update")),
)
"""Only with leader election (more than one replica, or shards), in the operator's own
namespace (kube/lease.py: read, create, replace the Lease; list the Leases to refuse a
namespace another shard holds)."""

SECRETS: tuple[Rule, ...] = (("", "secrets", ("get",)),)
"""Only when a value enables it; the operator never reads Secrets today."""
