"""A disaggregated service: one workload per role, each ``vllm serve`` with vLLM's NIXL KV
connector and the role label the llm-d inference scheduler routes on.

- **Workloads**: ``<name>-prefill`` and ``<name>-decode``, each a Deployment, or a
  LeaderWorkerSet when that role's replica spans nodes (``render.lws``: leader and worker
  templates, the group's launch flags). Each role's pod template is the aggregated one built from
  the role's plan (``planning.disaggregation.role_plan``: its layout, ``--max-num-seqs``,
  ``--max-num-batched-tokens``, ``--max-model-len``; startup probe and drain hook as today).
- **KV transfer**: ``--kv-transfer-config {"kv_connector":"NixlConnector","kv_role":"kv_both"}``
  on both roles (vLLM's ``KVTransferConfig`` keys; with NIXL the request, not the flag, says
  which side produces), and ``VLLM_NIXL_SIDE_CHANNEL_HOST`` set to the pod's IP so the peer's
  handshake reaches it.
- **Routing labels**: ``llm-d.ai/role: prefill | decode`` (the llm-d inference scheduler's
  ``RoleLabel``, values ``RolePrefill``/``RoleDecode``), and the instance labels every pod of the
  service shares, so one InferencePool selects both roles and the scheduler's prefill and decode
  filters split them. tokenscale builds no router.
- **Service**: selects the decode pods (a P/D-aware gateway sends a request to a decode pod,
  whose routing sidecar asks a prefill pod first; a plain client reaching a decode pod is served
  end to end). **PDBs**: one per role.

Each role's selector adds its role label to the service's selector labels, so the two
workloads never select each other's pods.
"""

import json
from typing import Any

from tokenscale.api.inference_service import InferenceServiceSpec
from tokenscale.planning.disaggregation import role_plan
from tokenscale.planning.inputs import resolve_gpu
from tokenscale.planning.result import Plan
from tokenscale.render.deployment import deployment, pod_template
from tokenscale.render.labels import CONFIG_HASH_ANNOTATION, selector_labels
from tokenscale.render.lws import group_pdb_max_unavailable, leader_worker_set, lws_templates
from tokenscale.render.names import child_name
from tokenscale.render.service import pdb_min_available, pod_disruption_budget, service

#: The llm-d inference scheduler's role label and the values its P/D filters select.
LLMD_ROLE_LABEL = "llm-d.ai/role"
ROLES = ("prefill", "decode")
#: vLLM's ``--kv-transfer-config`` for the NIXL connector, both roles (``KVTransferConfig``).
KV_TRANSFER_CONFIG = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
NIXL_HOST_ENV = "VLLM_NIXL_SIDE_CHANNEL_HOST"


def kv_transfer_args() -> list[str]:
    """The flag and its JSON value, compact (one argument; no shell is involved)."""
    return ["--kv-transfer-config", json.dumps(KV_TRANSFER_CONFIG, separators=(",", ":"))]


def role_name(name: str, role: str) -> str:
    """``<child name>-prefill`` / ``-decode``: the role's workload and budget."""
    return f"{child_name(name)}-{role}"


def role_selector(name: str, role: str) -> dict[str, str]:
    return {**selector_labels(name), LLMD_ROLE_LABEL: role}


def _role_template(name: str, spec: InferenceServiceSpec, plan: Plan, role: str) -> dict[str, Any]:
    template = pod_template(name, spec, plan, resolve_gpu(spec))
    template["metadata"]["labels"][LLMD_ROLE_LABEL] = role
    container = template["spec"]["containers"][0]
    container["args"] = [*container["args"], *kv_transfer_args()]
    env = container.setdefault("env", [])
    env.append({"name": NIXL_HOST_ENV, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    return template


def _rename(obj: dict[str, Any], name: str, role: str) -> dict[str, Any]:
    obj["metadata"]["name"] = role_name(name, role)
    obj["metadata"]["labels"] = {**obj["metadata"]["labels"], LLMD_ROLE_LABEL: role}
    return obj


def role_objects(
    name: str,
    namespace: str,
    spec: InferenceServiceSpec,
    plan: Plan,
    role: str,
    replicas: int,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """One role's workload, its PDB, and the pod template(s) its hash covers."""
    rp = role_plan(plan, role)
    template = _role_template(name, spec, rp, role)
    if rp.nodes_per_replica > 1:
        templates = lws_templates(template, rp)
        workload = leader_worker_set(name, namespace, replicas, rp, templates, "")
        budget = pod_disruption_budget(
            name, namespace, 0, max_unavailable=group_pdb_max_unavailable(replicas, rp.sized.needed)
        )
        hashed: dict[str, Any] = templates
    else:
        workload = deployment(name, namespace, replicas, template, "")
        workload["spec"]["selector"]["matchLabels"] = role_selector(name, role)
        budget = pod_disruption_budget(
            name, namespace, pdb_min_available(replicas, rp.sized.needed)
        )
        hashed = template
    budget["spec"]["selector"]["matchLabels"] = role_selector(name, role)
    return _rename(workload, name, role), _rename(budget, name, role), hashed


def stamp(workload: dict[str, Any], digest: str) -> None:
    """Write the config hash into a workload and its pod template(s)."""
    workload["metadata"]["annotations"][CONFIG_HASH_ANNOTATION] = digest
    spec = workload["spec"]
    if "template" in spec:
        spec["template"]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION] = digest
    else:
        lwt = spec["leaderWorkerTemplate"]
        for key in ("leaderTemplate", "workerTemplate"):
            lwt[key]["metadata"]["annotations"][CONFIG_HASH_ANNOTATION] = digest


def decode_service(name: str, namespace: str, leader_only: bool) -> dict[str, Any]:
    """The service's Service, selecting the decode pods (their leaders, for LWS groups)."""
    svc = service(name, namespace, leader_only=leader_only)
    svc["spec"]["selector"] = {**svc["spec"]["selector"], LLMD_ROLE_LABEL: "decode"}
    return svc
