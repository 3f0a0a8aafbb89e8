"""Operator at scale: apply N InferenceServices at once against a real API server.

Run: ``python benchmarks/operator_load.py [--count 200] [--rounds 3]``. Each round starts a fresh
namespace and operator process, creates N InferenceServices (the bundled examples, renamed)
from 8 client threads, and measures the time until every Deployment exists and every status
carries its plan; the operator's peak RSS (VmHWM); and the p50/p99 of one reconcile (from
the operator's own debug log). Prints medians over the rounds. Targets: < 30 s for 200,
< 250 MB.
"""

import argparse
import re
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tokenscale.api.manifest import parse_manifests  # noqa: E402
from tokenscale.planning import plan_service  # noqa: E402
from tokenscale.playground.cluster import Cluster  # noqa: E402
from tokenscale.playground.processes import wait_for  # noqa: E402


def _single_node(path: Path) -> bool:
    """Examples whose replicas fit on one node: they render Deployments (multi-node ones render
    LeaderWorkerSets, whose API this benchmark's cluster does not serve)."""
    service = parse_manifests(path.read_text())[0]
    return plan_service(service.spec, service.metadata.name).nodes_per_replica == 1


EXAMPLES = [p for p in sorted((ROOT / "deploy" / "examples").glob("*.yaml")) if _single_node(p)]
CRD = ROOT / "crds" / "inferenceservices.tokenscale.io.yaml"


def _manifests(count: int) -> list[dict[str, Any]]:
    docs = [yaml.safe_load(p.read_text()) for p in EXAMPLES]
    out = []
    for i in range(count):
        doc = yaml.safe_load(yaml.safe_dump(docs[i % len(docs)]))
        doc["metadata"] = {"name": f"isvc-{i:04d}"}
        out.append(doc)
    return out


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_round(
    cluster: Cluster, api: client.ApiClient, count: int, n: int, work: Path
) -> dict[str, float]:
    ns = f"bench-{n}"
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    custom = client.CustomObjectsApi(api)
    core.create_namespace({"metadata": {"name": ns}})
    op = cluster.operator(f"operator-{n}", ns, 600, work, "--log-level", "DEBUG")
    try:
        time.sleep(3)  # let the operator start its watches
        docs = _manifests(count)
        start = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda d: custom.create_namespaced_custom_object(
                        "tokenscale.io", "v1alpha1", ns, "inferenceservices", d
                    ),
                    docs,
                )
            )
        created_s = time.monotonic() - start

        def all_done() -> bool:
            if not op.alive():
                raise RuntimeError(op.tail())
            deps = apps.list_namespaced_deployment(ns).items
            if len(deps) < count:
                return False
            items = custom.list_namespaced_custom_object(
                "tokenscale.io", "v1alpha1", ns, "inferenceservices"
            )["items"]
            return sum(1 for i in items if (i.get("status") or {}).get("plan")) == count

        wait_for(all_done, 300, "all deployments and statuses", interval_s=0.5)
        total_s = time.monotonic() - start
        rss = _peak_rss_mb(op.proc.pid)
    finally:
        op.stop()
    times = [
        float(m) for m in re.findall(r"reconciled \S+ in ([0-9.]+) ms", op.log_path.read_text())
    ]
    times.sort()
    return {
        "create_s": created_s,
        "all_ready_s": total_s,
        "peak_rss_mb": rss,
        "reconcile_p50_ms": statistics.median(times),
        "reconcile_p99_ms": times[min(len(times) - 1, int(0.99 * len(times)))],
        "reconciles": float(len(times)),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tokenscale-bench-"))
    cluster = Cluster(work / "cluster", crd_files=[CRD])
    (work / "cluster").mkdir()
    cluster.start()
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig()))
        rounds = [one_round(cluster, api, args.count, n, work) for n in range(args.rounds)]
    finally:
        cluster.stop()
    print(f"{args.count} InferenceServices, {args.rounds} rounds (medians):")
    for key, target in (
        ("all_ready_s", "< 30 s"),
        ("peak_rss_mb", "< 250 MB"),
        ("reconcile_p50_ms", ""),
        ("reconcile_p99_ms", ""),
        ("create_s", ""),
        ("reconciles", ""),
    ):
        values = [r[key] for r in rounds]
        print(
            f"  {key:18} median {statistics.median(values):9.1f}   "
            f"runs {', '.join(f'{v:.1f}' for v in values)}   {target}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
