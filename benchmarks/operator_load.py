"""Operator at scale: apply N InferenceServices at once against a real API server.

Run: ``python benchmarks/operator_load.py [--count 200] [--rounds 1] [--interval 15]
[--profile FILE]``. The
operator runs at the chart's default interval (15 s) unless ``--interval`` says otherwise, so
its periodic loop is part of the measurement. Each round starts a fresh namespace and
operator process and:

1. creates N InferenceServices (the bundled single-node examples, renamed) from 8 client
   threads and waits until every Deployment exists and every status carries its plan: the
   ready time and the operator's peak RSS (VmHWM); then until the Deployment controller has
   reported on every Deployment and the operator has logged no reconcile for 3 s:
   reconciles and API calls per create;
2. waits two intervals with nothing changing: the operator's API calls per service per
   unchanged tick (target: none) and the reconciles those ticks ran;
3. changes the workload of min(N, 50) services (four times the request rate: a new plan,
   more replicas for most) and waits until their statuses observed the new generation: API
   calls per such reconcile, and how many Deployments scaled.

Counts come from the operator's own ``/metrics`` (``tokenscale_api_requests_total``: its own
requests, Kopf's watches and annotation patches not included; ``tokenscale_reconciles_total``
by trigger); an operator without those series (an older build) reports reconciles from its
debug log only and API calls as n/a. One reconcile's p50/p99 come from the debug log.
Also reported, because the machine these run on is shared: the load average at the start,
the machine's idle CPU share until ready, and the CPU seconds per create of etcd, the API
server, the controllers and the operator together (a cost the machine's load does not
inflate). ``--profile`` records the operator with py-spy until ready (docs/scale-out.md).
Prints the median over rounds. Targets: ready < 30 s and RSS < 300 MB at 1,000.
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
import yaml
from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tokenscale.api.manifest import parse_manifests  # noqa: E402
from tokenscale.planning import plan_service  # noqa: E402
from tokenscale.playground.cluster import Cluster  # noqa: E402
from tokenscale.playground.processes import free_port, wait_for  # noqa: E402

DEFAULT_INTERVAL_S = 15.0  # charts/tokenscale/values.yaml: interval
SCALED = 50
GROUP, VERSION, PLURAL = "tokenscale.io", "v1alpha1", "inferenceservices"


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


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_times() -> tuple[float, float]:
    """The machine's (idle, total) CPU jiffies since boot (``/proc/stat``)."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)


def _idle_pct(since: tuple[float, float]) -> float:
    """The machine's idle CPU share (idle + iowait), in percent, since ``since``."""
    idle, total = _cpu_times()
    return 100.0 * (idle - since[0]) / max(1.0, total - since[1])


SAMPLE = re.compile(r"^(tokenscale_[a-z_]+)\{([^}]*)\} ([0-9.e+]+)$")


class Counters:
    """The operator's request and reconcile counters, read from its /metrics."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"

    def read(self) -> dict[str, float]:
        """``requests``, ``gets``, ``writes``, ``reconciles:<trigger>``, ``skipped:<trigger>``,
        ``ticks`` (empty when the operator exposes none of them)."""
        out: dict[str, float] = {}
        text = requests.get(self.url, timeout=5).text
        for line in text.splitlines():
            m = SAMPLE.match(line)
            if m is None:
                continue
            name, labels, value = m.group(1), m.group(2), float(m.group(3))
            label = dict(re.findall(r'(\w+)="([^"]*)"', labels))
            if name == "tokenscale_api_requests_total":
                out["requests"] = out.get("requests", 0) + value
                key = "gets" if label.get("method") == "GET" else "writes"
                out[key] = out.get(key, 0) + value
            elif name == "tokenscale_reconciles_total":
                out[f"reconciles:{label['trigger']}"] = value
            elif name == "tokenscale_reconciles_skipped_total":
                out[f"skipped:{label['trigger']}"] = value
        for line in text.splitlines():
            if line.startswith("tokenscale_evaluation_duration_seconds_count"):
                out["ticks"] = float(line.split()[-1])
        return out


def _delta(after: dict[str, float], before: dict[str, float], key: str) -> float:
    return after.get(key, 0.0) - before.get(key, 0.0)


def _sum(counters: dict[str, float], prefix: str, but: str = "") -> float:
    return sum(v for k, v in counters.items() if k.startswith(prefix) and k != but)


def _py_spy() -> str | None:
    """The py-spy executable (on PATH or beside this Python), or None."""
    beside = Path(sys.executable).with_name("py-spy")
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


def _profiler(pid: int, out: Path | None) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of the operator (every thread, idle ones too, collapsed stacks) into
    ``out``; None without ``out``. Stopped with SIGINT, on which py-spy writes the file."""
    spy = _py_spy()
    if out is None or spy is None:
        return None
    cmd = [spy, "record", "--pid", str(pid), "--rate", "50", "--idle", "--threads"]
    return subprocess.Popen([*cmd, "--format", "raw", "--output", str(out), "--nonblocking"])


def _stop_profiler(spy: subprocess.Popen[bytes] | None) -> None:
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)


def one_round(
    cluster: Cluster,
    api: client.ApiClient,
    count: int,
    n: int,
    work: Path,
    interval_s: float,
    profile: Path | None = None,
) -> dict[str, float]:
    ns = f"bench-{n}"
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    custom = client.CustomObjectsApi(api)
    core.create_namespace({"metadata": {"name": ns}})
    port = free_port()
    op = cluster.operator(
        f"operator-{n}", ns, interval_s, work, "--log-level", "DEBUG", "--metrics-port", str(port)
    )
    counters = Counters(port)
    out: dict[str, float] = {}
    try:
        wait_for(lambda: bool(requests.get(counters.url, timeout=2).ok), 60, "operator /metrics")
        time.sleep(3)  # let the operator start its watches
        docs = _manifests(count)
        spy = _profiler(op.proc.pid, profile)
        out["load_average_at_start"] = os.getloadavg()[0]
        machine = _cpu_times()
        pids = [*cluster.pids, op.proc.pid]
        cluster_cpu = sum(_cpu_s(pid) for pid in pids)
        start = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda d: custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, d),
                    docs,
                )
            )
        out["create_s"] = time.monotonic() - start

        def all_done() -> bool:
            if not op.alive():
                raise RuntimeError(op.tail())
            deps = apps.list_namespaced_deployment(ns).items
            if len(deps) < count:
                return False
            items = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]
            return sum(1 for i in items if (i.get("status") or {}).get("plan")) == count

        wait_for(all_done, 600, "all deployments and statuses", interval_s=0.5)
        out["all_ready_s"] = time.monotonic() - start
        out["machine_idle_pct_until_ready"] = _idle_pct(machine)
        spent = sum(_cpu_s(pid) for pid in pids) - cluster_cpu
        out["control_plane_cpu_s_per_create"] = spent / count
        _stop_profiler(spy)
        out["peak_rss_mb"] = _peak_rss_mb(op.proc.pid)
        out["operator_cpu_s_until_ready"] = _cpu_s(op.proc.pid)
        out["reconciles_until_ready_per_create"] = _logged(op) / count
        settle_start = time.monotonic()

        def reported() -> bool:  # the Deployment controller has reported on every Deployment
            deps = apps.list_namespaced_deployment(ns).items
            return all(
                (d.status.observed_generation or 0) >= (d.metadata.generation or 0) for d in deps
            )

        print(f"  ready after {out['all_ready_s']:.1f} s; waiting for the Deployment controller")
        # 200 Deployments took 54 s to settle, 1,000 more than 180 s: the wait grows with them
        settle_s = max(180.0, 0.6 * count)
        wait_for(reported, settle_s, "the Deployment controller's reports", interval_s=1)
        seen = -1
        while seen != _logged(op) and time.monotonic() - settle_start < 240:
            seen = _logged(op)  # then the owned objects' events: until 3 s pass quietly
            time.sleep(3)
        out["settled_s"] = time.monotonic() - start
        ready = counters.read()
        logged_ready = _logged(op)
        time.sleep(2 * interval_s + 2)  # two intervals with nothing changing
        quiet = counters.read()
        ticks = _delta(quiet, ready, "ticks")
        out["unchanged_ticks"] = ticks
        out["reconciles_per_unchanged_tick"] = (_logged(op) - logged_ready) / max(1.0, ticks)
        if any(k.startswith("reconciles:") for k in ready):
            creates = _sum(ready, "reconciles:", but="reconciles:tick")
            out["reconciles_per_create"] = creates / count
            for key, value in ready.items():
                if key.startswith(("reconciles:", "skipped:")) and not key.endswith(":tick"):
                    out[f"  {key.replace(':', ' by ')} per create"] = value / count
            out["tick_reconciles_while_creating"] = ready.get("reconciles:tick", 0.0)
            out["api_calls_per_create"] = ready.get("requests", 0.0) / count

            per = max(1.0, ticks) * count
            out["tick_reconciles_per_unchanged_tick"] = _delta(
                quiet, ready, "reconciles:tick"
            ) / max(1.0, ticks)
            out["api_calls_per_unchanged_tick"] = _delta(quiet, ready, "requests") / per
            out["gets_per_unchanged_tick"] = _delta(quiet, ready, "gets") / per

            # 3. a new plan for some services: more replicas
            scaled = [f"isvc-{i:04d}" for i in range(min(count, SCALED))]
            before = {
                name: apps.read_namespaced_deployment(name, ns).spec.replicas for name in scaled
            }
            for i, name in enumerate(scaled):
                rps = docs[i]["spec"]["workload"]["rps"]["mean"] * 4
                patch = {"spec": {"workload": {"rps": {"mean": rps}}}}
                custom.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name, patch)

            def observed() -> bool:
                items = custom.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]
                done = {
                    i["metadata"]["name"]
                    for i in items
                    if (i.get("status") or {}).get("observedGeneration")
                    == i["metadata"].get("generation")
                }
                return set(scaled) <= done

            wait_for(observed, 120, "the changed services reconciled", interval_s=1)
            time.sleep(2)  # the owned-object events of the scale
            after = counters.read()
            out["scaled_deployments"] = float(
                sum(
                    1
                    for name in scaled
                    if apps.read_namespaced_deployment(name, ns).spec.replicas > before[name]
                )
            )
            updates = _delta(after, quiet, "reconciles:update")
            out["api_calls_per_scale"] = _delta(after, quiet, "requests") / max(1.0, updates)
            out["reconciles_per_scale"] = (
                _sum(after, "reconciles:", but="reconciles:tick")
                - _sum(quiet, "reconciles:", but="reconciles:tick")
            ) / len(scaled)
    finally:
        op.stop()
    times = sorted(float(m) for m in RECONCILED.findall(op.log_path.read_text()))
    out["reconcile_p50_ms"] = statistics.median(times)
    out["reconcile_p99_ms"] = times[min(len(times) - 1, int(0.99 * len(times)))]
    out["reconciles_logged"] = float(len(times))
    return out


RECONCILED = re.compile(r"reconciled \S+ (?:\(\w+\) )?in ([0-9.]+) ms")


def _logged(op: Any) -> int:
    """Reconciles the operator has logged so far (its debug log: every build has it)."""
    return len(RECONCILED.findall(op.log_path.read_text()))


ROWS = (
    ("all_ready_s", "< 30 s at 1,000"),
    ("peak_rss_mb", "< 300 MB"),
    ("operator_cpu_s_until_ready", ""),
    ("control_plane_cpu_s_per_create", "etcd, API server, controllers, operator: load-proof"),
    ("reconciles_until_ready_per_create", "ticks included"),
    ("reconciles_per_create", "1"),
    ("api_calls_per_create", ""),
    ("tick_reconciles_while_creating", ""),
    ("settled_s", "Deployment controller reported, events handled"),
    ("unchanged_ticks", ""),
    ("api_calls_per_unchanged_tick", "0"),
    ("gets_per_unchanged_tick", "0"),
    ("reconciles_per_unchanged_tick", "all triggers, all services"),
    ("tick_reconciles_per_unchanged_tick", "all services"),
    ("reconciles_per_scale", ""),
    ("api_calls_per_scale", ""),
    ("scaled_deployments", f"of {SCALED}"),
    ("reconcile_p50_ms", ""),
    ("reconcile_p99_ms", ""),
    ("create_s", ""),
    ("load_average_at_start", "the machine is shared"),
    ("machine_idle_pct_until_ready", "all cores, API server and etcd included"),
    ("reconciles_logged", ""),
)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--interval",
        type=float,
        default=DEFAULT_INTERVAL_S,
        help="The operator's --interval (default: the chart's, 15 s).",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="Record the operator with py-spy (pip install py-spy) from the first create until "
        "all are ready (collapsed stacks, per thread, idle included) into this file (round 1 "
        "only).",
    )
    args = parser.parse_args()
    if args.profile is not None and _py_spy() is None:
        print("error: --profile needs py-spy (pip install py-spy)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="tokenscale-bench-"))
    cluster = Cluster(work / "cluster", crd_files=[CRD])
    (work / "cluster").mkdir()
    cluster.start()
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig()))
        rounds = [
            one_round(
                cluster, api, args.count, n, work, args.interval, args.profile if n == 0 else None
            )
            for n in range(args.rounds)
        ]
    finally:
        cluster.stop()
    print(
        f"{args.count} InferenceServices, operator --interval {args.interval:g} s, "
        f"{args.rounds} round(s) (medians):"
    )
    extra = sorted({k for r in rounds for k in r if k.startswith("  ")})
    rows = [*ROWS[:5], *((k, "") for k in extra), *ROWS[5:]]
    for key, target in rows:
        values = [r[key] for r in rounds if key in r]
        if not values:
            print(f"  {key:34} n/a")
            continue
        print(
            f"  {key:34} median {statistics.median(values):9.2f}   "
            f"runs {', '.join(f'{v:.2f}' for v in values)}   {target}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
