"""Generate the InferenceService CustomResourceDefinition from the pydantic models.

The models are the single source of truth: ``tokenscale crd`` writes
``crds/inferenceservices.tokenscale.io.yaml`` and a test fails when the committed file drifts.
The JSON Schema pydantic produces is rewritten into a *structural* OpenAPI v3 schema that a
1.20 API server accepts: ``$ref`` inlined; ``anyOf [X, null]`` → plain ``X`` (absent means
None: the API server prunes a null sent for a non-nullable field, and a ``nullable`` field
would lose its type in the OpenAPI v2 that ``kubectl explain`` reads); draft-2020 numeric
``exclusiveMinimum`` → OpenAPI 3.0 booleans; ``const`` → ``enum``; free-form objects →
``x-kubernetes-preserve-unknown-fields``; mixed int/string enums →
``x-kubernetes-int-or-string``. Cross-field rules stay in the operator (no CEL on 1.20).
"""

from typing import Any

from tokenscale.api.inference_service import API_GROUP, API_VERSION, KIND, InferenceServiceSpec
from tokenscale.api.status import InferenceServiceStatus

PLURAL = "inferenceservices"
SINGULAR = "inferenceservice"
SHORT_NAMES = ["infsvc", "tsvc"]
CATEGORIES = ["tokenscale"]
CRD_NAME = f"{PLURAL}.{API_GROUP}"

_DROP = {"title", "$defs", "discriminator"}


def _resolve(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_resolve(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].split("/")[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _resolve(merged, defs)
    return {k: _resolve(v, defs) for k, v in node.items() if k not in _DROP}


def _structural(node: Any) -> Any:
    if isinstance(node, list):
        return [_structural(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = dict(node)
    for key in ("anyOf", "oneOf"):
        options = node.pop(key, None)
        if options is None:
            continue
        non_null = [o for o in options if o.get("type") != "null"]
        if len(non_null) == 1:
            inner = _structural(non_null[0])
            node = {**inner, **node}
        else:
            types = {o.get("type") for o in non_null}
            if types <= {"integer", "string"}:
                node["x-kubernetes-int-or-string"] = True
            else:  # pragma: no cover - no such field today
                raise ValueError(f"cannot express union {options} structurally")
    if "const" in node:
        node["enum"] = [node.pop("const")]
    if "enum" in node and "type" not in node:
        kinds = {type(v) for v in node["enum"]}
        if kinds == {str}:
            node["type"] = "string"
        elif kinds <= {int}:
            node["type"] = "integer"
        else:
            node["x-kubernetes-int-or-string"] = True
    for bound, strict in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if isinstance(node.get(strict), int | float) and not isinstance(node[strict], bool):
            node[bound] = node.pop(strict)
            node[strict] = True
    if node.get("default") in (None, ""):  # a 1.20 API server reads "" as null and rejects it
        node.pop("default", None)
    if node.get("type") == "object":
        if "properties" in node:
            node["properties"] = {k: _structural(v) for k, v in node["properties"].items()}
            node.pop("additionalProperties", None)
        else:
            extra = node.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                node["additionalProperties"] = _structural(extra)
            else:
                node.pop("additionalProperties", None)
                node["x-kubernetes-preserve-unknown-fields"] = True
    if node.get("type") == "array" and "items" in node:
        node["items"] = _structural(node["items"])
    return node


def openapi_schema(model: type[InferenceServiceSpec] | type[InferenceServiceStatus]) -> Any:
    """The structural schema of one model (by alias, as the YAML spells it)."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.get("$defs", {})
    return _structural(_resolve(raw, defs))


def _columns() -> list[dict[str, Any]]:
    def col(name: str, kind: str, path: str, description: str, priority: int = 0) -> dict[str, Any]:
        c: dict[str, Any] = {
            "name": name,
            "type": kind,
            "jsonPath": path,
            "description": description,
        }
        if priority:
            c["priority"] = priority
        return c

    return [
        col("Model", "string", ".spec.model.name", "Served model"),
        col("GPU", "string", ".spec.hardware.gpu", "GPU catalog key"),
        col("TP", "integer", ".status.tensorParallelSize", "GPUs per replica"),
        col("Ready", "integer", ".status.readyReplicas", "Ready replicas"),
        col("Desired", "integer", ".status.replicas", "Desired replicas"),
        col("Prefill", "integer", ".status.roles.prefill.replicas", "Prefill replicas (P/D)"),
        col("Decode", "integer", ".status.roles.decode.replicas", "Decode replicas (P/D)"),
        col("Binding", "string", ".status.plan.bindingConstraint", "Binding constraint"),
        col(
            "TTFT-P99",
            "string",
            ".status.ttftP99",
            "TTFT P99: live when metrics exist, else the plan's estimate (labelled)",
        ),
        col("KV", "number", ".status.live.kvUsage", "KV cache usage (live, max over replicas)"),
        col("Age", "date", ".metadata.creationTimestamp", "Age"),
    ]


def _without_defaults(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_defaults(v) for k, v in node.items() if k != "default"}
    if isinstance(node, list):
        return [_without_defaults(v) for v in node]
    return node


def build_crd() -> dict[str, Any]:
    """The whole CRD object (apiextensions.k8s.io/v1)."""
    status = _without_defaults(openapi_schema(InferenceServiceStatus))  # written, not defaulted
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/name": "tokenscale"}},
        "spec": {
            "group": API_GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": SHORT_NAMES,
                "categories": CATEGORIES,
            },
            "versions": [
                {
                    "name": API_VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": "An LLM inference service served by vLLM, sized "
                            "and scaled by tokenscale.",
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": openapi_schema(InferenceServiceSpec),
                                "status": status,
                            },
                        }
                    },
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.scaling.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                    "additionalPrinterColumns": _columns(),
                }
            ],
        },
    }
