"""Operator at scale: apply N InferenceServices at once against a real API server, measured
against the control plane's own floor in the same run.

Run: ``python benchmarks/operator_load.py [--count 200] [--rounds 1] [--interval 15]
[--shards 1] [--metrics] [--profile FILE [--profile-on-cpu]] [--controller-qps 100]
[--controller-burst 100]``.
The operator runs at the chart's default interval (15 s) unless ``--interval`` says
otherwise, so its periodic loop is part of the measurement. The control plane's controller
manager runs with a large cluster's client limits (``--kube-api-qps 100 --kube-api-burst
100``, not Kubernetes' 20 and 30) for both phases alike. Each round:

0. **the floor**: with no operator, a plain client writes what the operator writes for each
   of the N × shards services — the InferenceService, its Deployment, Service and
   PodDisruptionBudget (rendered by the operator's own code) and one status write — from 8
   threads, in a namespace of its own; then waits (untimed, followed by a watch) until the
   Deployment controller has reported on those Deployments. No pod is created in any of the
   benchmark's namespaces (a ResourceQuota of 0 pods in each: the ReplicaSet controller's pod
   creates, held to the controller manager's client rate, would otherwise land in whichever
   phase came later);
1. starts one operator per shard (``--shards``: disjoint namespaces, one each, N services
   each), creates the N × shards InferenceServices (the bundled single-node examples,
   renamed) from 8 client threads and waits until every Deployment exists and every status
   carries its plan: the ready time, **ready ÷ floor**, the operators' peak RSS (VmHWM);
   then until the Deployment controller has reported on every Deployment and the operators
   have logged no reconcile for 3 s: reconciles, API calls and status PUTs per create, the
   resident growth per service and what the watch cache holds per service, by kind;
2. waits with nothing changing (two intervals; 120 s with ``--metrics``): API calls per
   service per unchanged tick (target: none), the reconciles those ticks ran, and status
   writes per service per minute (``--metrics``: a real Prometheus scraping vLLM metrics
   emulators at a steady light load, every service with series; the window starts once no
   decision moved for two intervals, the engines having first stepped down from the
   forecast's replicas to what the light load needs; target ≤ 0.2, one per five minutes,
   when nothing a reader acts on moved);
3. changes the workload of min(N, 50) services of the first shard (four times the request
   rate: a new plan, more replicas for most) and waits until their statuses observed the new
   generation: API calls per such reconcile, and how many Deployments scaled.

Counts come from the operators' own ``/metrics`` (``tokenscale_api_requests_total``: their
own requests, Kopf's watches not included, a status PUT the only PUT;
``tokenscale_reconciles_total`` by trigger); an operator without those series (an older
build) reports reconciles from its debug log only and API calls as n/a. One reconcile's
p50/p99 come from the debug log. Also reported, because the machine these run on is shared:
the load average at the start, the machine's idle CPU share until ready, and the CPU seconds
per create of etcd, the API server, the controllers and the operators (the operators' share
apart), beside the control plane's CPU seconds per service during the floor.
``--profile`` records the (first) operator with py-spy until ready (docs/scale-out.md);
``--profile-on-cpu`` keeps only the samples of the thread holding the GIL.
Prints the median over rounds. Targets: ready ÷ floor ≤ 1.3 and peak RSS < 250 MB at 1,000.
"""

import argparse
import json
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
import yaml
from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.vllm_emulator import Load, VllmMetricsEmulator  # noqa: E402
from tokenscale.api.manifest import parse_manifests  # noqa: E402
from tokenscale.api.status import Condition, InferenceServiceStatus  # noqa: E402
from tokenscale.controller.status import plan_summary, status_document  # noqa: E402
from tokenscale.kube.connect import bearer_token  # noqa: E402
from tokenscale.kube.store import slim  # noqa: E402
from tokenscale.planning import plan_service  # noqa: E402
from tokenscale.playground.cluster import Cluster  # noqa: E402
from tokenscale.playground.processes import free_port, wait_for  # noqa: E402
from tokenscale.playground.prometheus import PrometheusServer  # noqa: E402
from tokenscale.render import Owner, render_bundle, selector_string  # noqa: E402

DEFAULT_INTERVAL_S = 15.0  # charts/tokenscale/values.yaml: interval
SCALED = 50
EMULATORS = 50
"""Emulators behind the services' series with ``--metrics`` (each under several services)."""
SCRAPE_S = 10.0
"""``--metrics``: a production-like scrape interval (1,000 targets every second would starve
this machine)."""
QUIET_WITH_METRICS_S = 120.0
QUIET_WAIT_S = 600.0
"""``--metrics``: the longest wait for the decisions to stop moving before the quiet window."""
CONTROLLER_API_QPS = 100.0
CONTROLLER_API_BURST = 100
"""The controller manager's client rate limit and burst for both phases (``--kube-api-qps``,
``--kube-api-burst``; Kubernetes' defaults 20 and 30): a large cluster's, as Kubernetes' own
5,000-node scalability tests run it. At the defaults the Deployment controller, writing a
ReplicaSet, an event and status updates for each new Deployment through its own client, took
more than 25 minutes to report on 5,000 Deployments (docs/scale-out.md)."""
STAMP = "2026-01-01T00:00:00Z"
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


def _request(
    api: client.ApiClient,
    method: str,
    path: str,
    body: object,
    query: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """One JSON request with the client's credentials; its answer parsed as plain JSON (no
    client models: the floor is the control plane's cost, not this client's)."""
    request = api.param_serialize(
        method,
        path,
        query_params=query or [],
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*request)
    response.read()
    if not 200 <= response.status < 300:
        raise client.exceptions.ApiException(http_resp=response)
    return dict(json.loads(response.data or b"{}"))


_PLANS: dict[str, Any] = {}


def _shared_plan(spec: Any, name: str) -> Any:
    """The plan of ``spec``, named ``name``: planned once per distinct spec (the services are
    the examples renamed), as the operator's memo does (``controller/plans.py``)."""
    key = spec.model_dump_json()
    if key not in _PLANS:
        _PLANS[key] = plan_service(spec, name)
    return _PLANS[key].model_copy(update={"name": name})


def _floor_objects(doc: dict[str, Any], ns: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What the operator writes for one new plan-only service, rendered by the operator's own
    code: the Deployment, Service and PodDisruptionBudget (in that order) and the status (the
    plan, the counts and the conditions of a create)."""
    service = parse_manifests(yaml.safe_dump(doc))[0]
    name = service.metadata.name
    plan = _shared_plan(service.spec, name)
    replicas = plan.sized.total
    bundle = render_bundle(name, ns, service.spec, plan, replicas, Owner(name, "uid"))
    slo = service.spec.slo
    status = InferenceServiceStatus(
        observed_generation=1,
        replicas=replicas,
        ready_replicas=0,
        available_replicas=0,
        selector=selector_string(name),
        decided_replicas=replicas,
        tensor_parallel_size=plan.tensor_parallel_size,
        conditions=[
            Condition(type=t, status=s, reason=r, message=m, last_transition_time=STAMP)
            for t, s, r, m in (
                ("PlanFeasible", "True", "Feasible", "the plan meets the SLOs"),
                ("DeploymentAvailable", "False", "ReplicasUnavailable", f"0/{replicas}"),
                ("Ready", "False", "DeploymentUnavailable", f"0/{replicas} replicas ready"),
                ("MetricsAvailable", "False", "NoMetricsSource", "no Prometheus configured"),
            )
        ],
        plan=plan_summary(plan, slo.ttft_p99_seconds, slo.tpot_p99_seconds),
    )
    return [bundle.workload, bundle.service, bundle.pdb], status_document(status)


METADATA_ONLY = "application/json;as=PartialObjectMetadata{};g=meta.k8s.io;v=v1"
"""What the timed phases' observer asks of Deployments: that each exists (a list answer's
items and a watch event's object carry the metadata alone; ``{}``: ``List`` for a list)."""


def floor(api: client.ApiClient, count: int, ns: str, observed: bool = True) -> float:
    """The control plane's own floor: with no operator, a plain client creating what the
    operator writes per service (the InferenceService, its Deployment, Service and
    PodDisruptionBudget, one status write) for ``count`` services from 8 threads, in namespace
    ``ns``. Rendering is done before the clock starts; the seconds until the last write.
    ``observed``: with the observer the operator's phase needs to see ready (the same
    :class:`Readiness`, over this namespace) following the writes, so that its load on the
    API server and on this machine is in both phases; without it, the floor as first defined
    (a client that watches nothing)."""
    _namespace(api, ns)
    docs = _manifests(count)
    rendered = [_floor_objects(doc, ns) for doc in docs]
    pdb_version = "policy/v1beta1" if _served(api, "/apis/policy/v1") is False else "policy/v1"
    isvcs = f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}"
    paths = {
        "Deployment": f"/apis/apps/v1/namespaces/{ns}/deployments",
        "Service": f"/api/v1/namespaces/{ns}/services",
        "PodDisruptionBudget": f"/apis/{pdb_version}/namespaces/{ns}/poddisruptionbudgets",
    }

    def one(i: int) -> None:
        doc, (objects, status) = docs[i], rendered[i]
        made = _request(api, "POST", isvcs, {**doc, "metadata": {**doc["metadata"]}})
        meta = made["metadata"]
        for obj in objects:
            owner = {**obj["metadata"]["ownerReferences"][0], "uid": meta["uid"]}
            body = {**obj, "metadata": {**obj["metadata"], "ownerReferences": [owner]}}
            if obj["kind"] == "PodDisruptionBudget":
                body["apiVersion"] = pdb_version
            _request(api, "POST", paths[obj["kind"]], body)
        put = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "InferenceService",
            "metadata": {
                "name": meta["name"],
                "namespace": ns,
                "resourceVersion": meta["resourceVersion"],
            },
            "status": status,
        }
        _request(api, "PUT", f"{isvcs}/{meta['name']}/status", put)

    observer = Readiness(api, [ns], reports=False) if observed else None
    if observer is not None:
        time.sleep(3)  # its watches started, as the operator's phase waits for its own
    try:
        start = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(one, range(count)))
        took = time.monotonic() - start
    finally:
        if observer is not None:
            observer.close()
    return took


def _namespace(api: client.ApiClient, ns: str) -> None:
    """A namespace in which no pod can be created (a ResourceQuota of 0 pods), for the floor
    and for each operator alike. The cluster has no kubelet; its ReplicaSet controller, held
    to the controller manager's client rate, would still create each Deployment's pods (1,175
    for 200 of these services), and those creates would land in whichever phase came later."""
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": ns}})
    quota = {"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}}
    core.create_namespaced_resource_quota(ns, quota)


def _served(api: client.ApiClient, path: str) -> bool:
    try:
        _request(api, "GET", path, None)
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _peak_rss_mb(pid: int, field: str = "VmHWM") -> float:
    """The process' peak resident set (``VmRSS``: its resident set now), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _deep_kb(obj: Any, seen: set[int] | None = None) -> float:
    """What a parsed JSON object costs in a Python process, in KB (every dict, list, string
    and number it holds, each counted once)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0.0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_kb(k, seen) * 1024 + _deep_kb(v, seen) * 1024 for k, v in obj.items())
    elif isinstance(obj, list):
        size += sum(_deep_kb(v, seen) * 1024 for v in obj)
    return size / 1024


def _cached_kb(api: client.ApiClient, ns: str, sample: int = 50) -> dict[str, float]:
    """What the watch cache holds per service, by kind: ``sample`` objects of each kind as
    the API server serves them, slimmed as the cache slims them (``kube/store.py``), what
    they hold together divided by ``sample`` (a string the cache shares counts once)."""
    pdb = "policy/v1beta1" if _served(api, "/apis/policy/v1") is False else "policy/v1"
    paths = {
        "InferenceService": f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}",
        "Deployment": f"/apis/apps/v1/namespaces/{ns}/deployments",
        "Service": f"/api/v1/namespaces/{ns}/services",
        "PodDisruptionBudget": f"/apis/{pdb}/namespaces/{ns}/poddisruptionbudgets",
    }
    out = {}
    for kind, path in paths.items():
        items = _request(api, "GET", path, None, [("limit", str(sample))])["items"]
        # each one parsed alone, as the cache's watch events are, and all kept alive while
        # counted (a freed object's address would be taken for one already counted)
        kept = [slim(json.loads(json.dumps(i))) for i in items]
        seen: set[int] = set()
        out[kind] = sum(_deep_kb(i, seen) for i in kept) / max(1, len(kept))
    return out


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
        # 60 s: at 5,000 services the page holds ~75,000 series, written by a busy process
        text = requests.get(self.url, timeout=60).text
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
                if label.get("method") == "PUT":  # the status subresource: nothing else
                    out["puts"] = out.get("puts", 0) + value
            elif name == "tokenscale_scale_events_total":
                out["scales"] = out.get("scales", 0) + value
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


def _profiler(pid: int, out: Path | None, on_cpu: bool = False) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of the operator (every thread, idle ones too, collapsed stacks) into
    ``out``; None without ``out``. ``on_cpu``: only the thread holding the GIL at each sample
    (where the operator's own Python CPU goes). Stopped with SIGINT, on which py-spy writes
    the file."""
    spy = _py_spy()
    if out is None or spy is None:
        return None
    cmd = [spy, "record", "--pid", str(pid), "--rate", "50", "--threads"]
    cmd.append("--gil" if on_cpu else "--idle")
    return subprocess.Popen([*cmd, "--format", "raw", "--output", str(out), "--nonblocking"])


def _stop_profiler(spy: subprocess.Popen[bytes] | None) -> None:
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)


@dataclass
class MetricsFleet:
    """A real Prometheus scraping vLLM metrics emulators under a steady, light load (each
    emulator scraped under several services' labels, every 10 s): every service has series,
    nothing moves."""

    prometheus: PrometheusServer
    stop: Any
    child: Any
    targets: list[str]

    @classmethod
    def start(cls, work: Path) -> "MetricsFleet":
        prometheus = PrometheusServer(work / "prometheus", scrape_interval_s=SCRAPE_S)
        (work / "prometheus").mkdir()
        prometheus.start()
        spawn = multiprocessing.get_context("spawn")
        ours, theirs = spawn.Pipe()
        stop = spawn.Event()
        child = spawn.Process(target=serve_quiet_emulators, args=(theirs, stop), daemon=True)
        child.start()
        return cls(prometheus, stop, child, ours.recv())

    def serve(self, services: list[tuple[str, str]]) -> None:
        groups = [
            {
                "targets": [self.targets[i % len(self.targets)]],
                "labels": {"namespace": ns, "inferenceservice": name},
            }
            for i, (ns, name) in enumerate(services)
        ]
        self.prometheus.targets_file.write_text(json.dumps(groups))

    def close(self) -> None:
        self.stop.set()
        self.child.join(30)
        self.prometheus.stop()


def serve_quiet_emulators(conn: Any, stop: Any) -> None:
    """In a child process (the operator's machine share is measured, not the emulators'):
    :data:`EMULATORS` emulators at a steady light load; their targets go back through
    ``conn``."""
    pods = []
    for i in range(EMULATORS):
        pod = VllmMetricsEmulator(model_name=f"m{i}").start()
        pod.set_state(running=2, waiting=0, kv_usage=0.2)
        pod.set_load(Load(rps=0.5))
        pods.append(pod)
    conn.send([pod.target for pod in pods])
    stop.wait()
    for pod in pods:
        pod.stop()


class Readiness:
    """Which Deployments exist and which of them the Deployment controller has reported on
    (``status.observedGeneration`` reached ``metadata.generation``), and which
    InferenceServices' statuses carry a plan (``services``), in ``namespaces``: one LIST from
    the API server's watch cache per kind and namespace, then a watch stream, so a wait costs
    no LIST per poll (a poll listing a thousand Deployments and a thousand InferenceServices
    twice a second was load the floor did not carry; a LIST of 5,000 Deployments from etcd
    every 2 s, parsed into the client's models, held 60 % of a core in this process)."""

    def __init__(
        self,
        api: client.ApiClient,
        namespaces: list[str],
        services: bool = True,
        reports: bool = True,
    ) -> None:
        """``reports=False``: the Deployments' metadata only (``PartialObjectMetadata``: that
        each exists, not what the Deployment controller reported), the lighter watch the
        timed phases use."""
        cfg = api.configuration
        self.host, self.verify = cfg.host, (cfg.ssl_ca_cert or True) if cfg.verify_ssl else False
        self.headers = {"Authorization": f"Bearer {bearer_token(api)}"}
        self.light = {} if reports else {"Accept": METADATA_ONLY}  # formatted per request
        self.deployments: set[tuple[str, str]] = set()
        self.reported: set[tuple[str, str]] = set()
        self.planned: set[tuple[str, str]] = set()
        self.stop = threading.Event()
        self.threads = []
        for ns in namespaces:
            follows = [(f"/apis/apps/v1/namespaces/{ns}/deployments", self._deployment, self.light)]
            if services:
                path = f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}"
                follows.append((path, self._service, {}))
            for path, seen, headers in follows:
                thread = threading.Thread(
                    target=self._follow, args=(path, seen, headers), daemon=True
                )
                thread.start()
                self.threads.append(thread)

    def _deployment(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        key = (meta["namespace"], meta["name"])
        self.deployments.add(key)
        if self.light:
            return  # metadata only: no status to read
        observed = (obj.get("status") or {}).get("observedGeneration") or 0
        if observed >= (meta.get("generation") or 0):
            self.reported.add(key)
        else:
            self.reported.discard(key)

    def _service(self, obj: dict[str, Any]) -> None:
        if (obj.get("status") or {}).get("plan"):
            meta = obj["metadata"]
            self.planned.add((meta["namespace"], meta["name"]))

    def _follow(self, path: str, seen: Any, headers: dict[str, str]) -> None:
        """A LIST from the watch cache (``resourceVersion=0``), then a watch from the list's
        version, resumed from the last event's. Not a watch from version 0: its current state
        comes in name order, not version order, so a stream cut during it (the API server
        closes a watcher that falls behind) resumed from the last object's version would skip
        the objects not yet sent. A 410 (the version left the cache) lists again."""
        version = ""
        while not self.stop.is_set():
            try:
                if not version:
                    listed = {k: v.format("List") for k, v in headers.items()}
                    listing = self._get(path, {"resourceVersion": "0"}, listed).json()
                    for obj in listing.get("items") or []:
                        seen(obj)
                    version = listing["metadata"]["resourceVersion"]
                params = {"watch": "1", "resourceVersion": version, "timeoutSeconds": "60"}
                watched = {k: v.format("") for k, v in headers.items()}
                with self._get(path, params, watched, stream=True) as answer:
                    for line in answer.iter_lines(chunk_size=65536):
                        if self.stop.is_set():
                            return
                        if not line:
                            continue
                        event = json.loads(line)
                        if event.get("type") == "ERROR":
                            version = ""
                            break
                        obj = event.get("object") or {}
                        version = (obj.get("metadata") or {}).get("resourceVersion", version)
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            seen(obj)
            except (requests.RequestException, KeyError, ValueError):
                time.sleep(1)

    def _get(
        self, path: str, params: dict[str, str], headers: dict[str, str], stream: bool = False
    ) -> Any:
        answer = requests.get(
            f"{self.host}{path}",
            params=params,
            headers={**self.headers, **headers},
            verify=self.verify,
            stream=stream,
            timeout=(10, 90),
        )
        answer.raise_for_status()
        return answer

    def count(self) -> tuple[int, int]:
        """(Deployments seen, InferenceServices with a plan)."""
        return len(self.deployments), len(self.planned)

    def reported_on(self, total: int) -> bool:
        """``total`` Deployments seen, and the Deployment controller has reported on each."""
        return len(self.deployments) >= total and len(self.reported) >= len(self.deployments)

    def close(self) -> None:
        self.stop.set()


def _sum_counters(reads: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for read in reads:
        for key, value in read.items():
            out[key] = out.get(key, 0.0) + value
    return out


def one_round(
    cluster: Cluster,
    api: client.ApiClient,
    count: int,
    n: int,
    work: Path,
    interval_s: float,
    profile: Path | None = None,
    profile_on_cpu: bool = False,
    shards: int = 1,
    metrics: MetricsFleet | None = None,
    quiet_s: float | None = None,
) -> dict[str, float]:
    """One round: the floor, then ``shards`` operators (one namespace each, ``count``
    services each)."""
    apps = client.AppsV1Api(api)
    custom = client.CustomObjectsApi(api)
    total = count * shards
    out: dict[str, float] = {}
    # the floor as first defined (nobody watching), then as the operator's phase is measured
    # (the same observer following the writes); each settles before the next phase
    for floor_ns, observed in ((f"floor-{n}-unobserved", False), (f"floor-{n}", True)):
        before_floor = sum(_cpu_s(pid) for pid in cluster.pids)
        took = floor(api, total, floor_ns, observed)
        cpu = (sum(_cpu_s(p) for p in cluster.pids) - before_floor) / total
        suffix = "" if observed else "_unobserved"
        out[f"floor{suffix}_s"], out[f"floor{suffix}_cpu_s_per_service"] = took, cpu
        seen = "observed" if observed else "unobserved"
        print(f"  floor ({seen}): {total} services' objects written in {took:.1f} s")
        # the Deployment controller catches up on the floor's Deployments before what follows
        settle_start = time.monotonic()
        reports = Readiness(api, [floor_ns], services=False)
        try:
            wait_for(
                lambda r=reports: r.reported_on(total),
                max(180.0, 0.6 * total),
                "the floor settled",
                1,
            )
        finally:
            reports.close()
        settled = out[f"floor{suffix}_settled_s"] = time.monotonic() - settle_start
        print(f"  floor: the Deployment controller reported {settled:.0f} s later")
    namespaces = [f"bench-{n}"] if shards == 1 else [f"bench-{n}-{k}" for k in range(shards)]
    ops, ports = [], []
    extra = [] if metrics is None else ["--prometheus-url", metrics.prometheus.url]
    docs = _manifests(count)
    if metrics is not None:
        metrics.serve([(ns, d["metadata"]["name"]) for ns in namespaces for d in docs])
    for k, ns in enumerate(namespaces):
        _namespace(api, ns)
        ports.append(free_port())
        ops.append(
            cluster.operator(
                f"operator-{n}-{k}",
                ns,
                interval_s,
                work,
                "--log-level",
                "DEBUG",
                "--metrics-port",
                str(ports[-1]),
                *extra,
            )
        )
    counters = [Counters(port) for port in ports]

    def read() -> dict[str, float]:
        return _sum_counters([c.read() for c in counters])

    def logged() -> int:
        return sum(_logged(op) for op in ops)

    try:
        for c in counters:
            wait_for(lambda c=c: bool(requests.get(c.url, timeout=2).ok), 60, "operator /metrics")
        time.sleep(3)  # let the operators start their watches
        rss_before = sum(_peak_rss_mb(op.proc.pid, "VmRSS") for op in ops)
        spy = _profiler(ops[0].proc.pid, profile, profile_on_cpu)
        out["load_average_at_start"] = os.getloadavg()[0]
        machine = _cpu_times()
        pids = [*cluster.pids, *(op.proc.pid for op in ops)]
        cluster_cpu = sum(_cpu_s(pid) for pid in pids)
        readiness = Readiness(api, namespaces, reports=False)  # the floor's observer
        work_items = [(ns, d) for d in docs for ns in namespaces]  # the shards interleaved
        start = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda item: custom.create_namespaced_custom_object(
                        GROUP, VERSION, item[0], PLURAL, item[1]
                    ),
                    work_items,
                )
            )
        out["create_s"] = time.monotonic() - start

        def all_done() -> bool:
            for op in ops:
                if not op.alive():
                    raise RuntimeError(op.tail())
            return min(readiness.count()) >= total

        try:
            wait_for(all_done, 1200, "all deployments and statuses", interval_s=0.2)
        except BaseException:
            readiness.close()
            raise
        out["all_ready_s"] = time.monotonic() - start
        out["ready_over_floor"] = out["all_ready_s"] / out["floor_s"]
        out["ready_over_unobserved_floor"] = out["all_ready_s"] / out["floor_unobserved_s"]
        out["machine_idle_pct_until_ready"] = _idle_pct(machine)
        spent = sum(_cpu_s(pid) for pid in pids) - cluster_cpu
        out["control_plane_cpu_s_per_create"] = spent / total
        out["operator_cpu_s_per_create"] = sum(_cpu_s(op.proc.pid) for op in ops) / total
        _stop_profiler(spy)
        out["peak_rss_mb"] = max(_peak_rss_mb(op.proc.pid) for op in ops)
        out["operator_cpu_s_until_ready"] = sum(_cpu_s(op.proc.pid) for op in ops)
        out["reconciles_until_ready_per_create"] = logged() / total
        settle_start = time.monotonic()

        print(
            f"  ready after {out['all_ready_s']:.1f} s ({out['ready_over_floor']:.2f} × the "
            "floor); waiting for the Deployment controller"
        )
        readiness.close()  # untimed from here: a full watch for the Deployment controller's reports
        reports = Readiness(api, namespaces, services=False)
        # 200 Deployments took 54 s to settle, 1,000 more than 180 s: the wait grows with them
        settle_s = max(180.0, 0.6 * total)
        try:  # the Deployment controller has reported on every Deployment
            wait_for(
                lambda: reports.reported_on(total),
                settle_s,
                "the Deployment controller's reports",
                interval_s=1,
            )
        finally:
            reports.close()
        seen = -1
        while seen != logged() and time.monotonic() - settle_start < 240:
            seen = logged()  # then the owned objects' events: until 3 s pass quietly
            time.sleep(3)
        out["settled_s"] = time.monotonic() - start
        rss_settled = sum(_peak_rss_mb(op.proc.pid, "VmRSS") for op in ops)
        out["rss_mb_before_creates"] = rss_before
        out["rss_kb_per_service_settled"] = (rss_settled - rss_before) * 1024 / total
        for kind, kb in _cached_kb(api, namespaces[0]).items():
            out[f"  cached {kind} KB"] = kb
        ready = read()
        calm, calm_since = ready, time.monotonic()
        if metrics is not None:
            # the engines first move from the forecast's replicas to what the emulated load
            # needs (a scale-down per window): quiet is when no decision moved for 2 intervals
            deadline = time.monotonic() + QUIET_WAIT_S
            while time.monotonic() < deadline:
                time.sleep(2 * interval_s)
                now = read()
                if _delta(now, calm, "scales") == 0:
                    break
                calm = now
            out["decisions_settled_after_s"] = time.monotonic() - calm_since
            calm = read()
        logged_ready = logged()
        quiet = 2 * interval_s + 2 if quiet_s is None else quiet_s  # nothing changing
        time.sleep(quiet)
        after_quiet = read()
        ticks = _delta(after_quiet, calm, "ticks") / len(ops)
        out["unchanged_ticks"] = ticks
        out["reconciles_per_unchanged_tick"] = (logged() - logged_ready) / max(1.0, ticks)
        out["status_writes_per_service_per_min_quiet"] = (
            _delta(after_quiet, calm, "puts") / total / (quiet / 60)
        )
        out["decided_scales_while_quiet"] = _delta(after_quiet, calm, "scales")
        out["status_puts_per_create"] = ready.get("puts", 0.0) / total
        if any(k.startswith("reconciles:") for k in ready):
            creates = _sum(ready, "reconciles:", but="reconciles:tick")
            out["reconciles_per_create"] = creates / total
            for key, value in ready.items():
                if key.startswith(("reconciles:", "skipped:")) and not key.endswith(":tick"):
                    out[f"  {key.replace(':', ' by ')} per create"] = value / total
            out["tick_reconciles_while_creating"] = ready.get("reconciles:tick", 0.0)
            out["api_calls_per_create"] = ready.get("requests", 0.0) / total
            out["  of which GETs per create"] = ready.get("gets", 0.0) / total

            per = max(1.0, ticks) * total
            out["tick_reconciles_per_unchanged_tick"] = _delta(
                after_quiet, calm, "reconciles:tick"
            ) / max(1.0, ticks)
            out["api_calls_per_unchanged_tick"] = _delta(after_quiet, calm, "requests") / per
            out["gets_per_unchanged_tick"] = _delta(after_quiet, calm, "gets") / per

            # 3. a new plan for some services of the first shard: more replicas
            ns = namespaces[0]
            scaled = [f"isvc-{i:04d}" for i in range(min(count, SCALED))]
            before = {
                name: apps.read_namespaced_deployment(name, ns).spec.replicas for name in scaled
            }
            for i, name in enumerate(scaled):
                rps = docs[i]["spec"]["workload"]["rps"]["mean"] * 4
                patch = {"spec": {"workload": {"rps": {"mean": rps}}}}
                custom.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name, patch)

            pending = set(scaled)

            def observed() -> bool:  # a GET of each changed service not yet seen, not a LIST
                for name in sorted(pending):
                    got = custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
                    status = got.get("status") or {}
                    if status.get("observedGeneration") == got["metadata"].get("generation"):
                        pending.discard(name)
                return not pending

            wait_for(observed, 120, "the changed services reconciled", interval_s=1)
            time.sleep(2)  # the owned-object events of the scale
            after = read()
            out["scaled_deployments"] = float(
                sum(
                    1
                    for name in scaled
                    if apps.read_namespaced_deployment(name, ns).spec.replicas > before[name]
                )
            )
            updates = _delta(after, after_quiet, "reconciles:update")
            out["api_calls_per_scale"] = _delta(after, after_quiet, "requests") / max(1.0, updates)
            out["reconciles_per_scale"] = (
                _sum(after, "reconciles:", but="reconciles:tick")
                - _sum(after_quiet, "reconciles:", but="reconciles:tick")
            ) / len(scaled)
        # the high-water mark over the whole round: the settle, quiet and scale phases too
        out["peak_rss_mb_end"] = max(_peak_rss_mb(op.proc.pid) for op in ops)
    except BaseException:
        # what was measured before the failure (a 5,000-service round is half an hour)
        alive = [_peak_rss_mb(op.proc.pid) for op in ops if op.alive()]
        out["peak_rss_mb_end"] = max(alive, default=float("nan"))
        print(f"  the round failed; measured until then: {json.dumps(out, indent=1)}")
        raise
    finally:
        for op in ops:
            op.stop()
    times = sorted(float(m) for op in ops for m in RECONCILED.findall(op.log_path.read_text()))
    out["reconcile_p50_ms"] = statistics.median(times)
    out["reconcile_p99_ms"] = times[min(len(times) - 1, int(0.99 * len(times)))]
    out["reconciles_logged"] = float(len(times))
    return out


RECONCILED = re.compile(r"reconciled \S+ (?:\(\w+\) )?in ([0-9.]+) ms")


def _logged(op: Any) -> int:
    """Reconciles the operator has logged so far (its debug log: every build has it)."""
    return len(RECONCILED.findall(op.log_path.read_text()))


ROWS = (
    ("floor_unobserved_s", "the control plane alone, same objects, 8 threads, nobody watching"),
    ("floor_s", "the same, the operator phase's observer following the writes"),
    ("floor_settled_s", "then until the Deployment controller reported (untimed)"),
    ("all_ready_s", ""),
    ("ready_over_floor", "≤ 1.3 (the same observer in both phases)"),
    ("ready_over_unobserved_floor", "against the floor nobody watched"),
    ("peak_rss_mb", "< 250 MB at 1,000 (the largest operator, at ready)"),
    ("peak_rss_mb_end", "the same, its high-water mark at the round's end"),
    ("rss_mb_before_creates", "all operators, watches started"),
    ("rss_kb_per_service_settled", "resident growth per service once settled"),
    ("operator_cpu_s_until_ready", ""),
    ("control_plane_cpu_s_per_create", "etcd, API server, controllers, operator: load-proof"),
    ("operator_cpu_s_per_create", "of which the operator's (start-up included)"),
    ("floor_cpu_s_per_service", "etcd, API server, controllers, during the floor's writes"),
    ("floor_unobserved_cpu_s_per_service", "the same, nobody watching"),
    ("reconciles_until_ready_per_create", "ticks included"),
    ("reconciles_per_create", "1"),
    ("api_calls_per_create", ""),
    ("status_puts_per_create", "1"),
    ("tick_reconciles_while_creating", ""),
    ("settled_s", "Deployment controller reported, events handled"),
    ("unchanged_ticks", ""),
    ("api_calls_per_unchanged_tick", "0"),
    ("gets_per_unchanged_tick", "0"),
    ("reconciles_per_unchanged_tick", "all triggers, all services"),
    ("tick_reconciles_per_unchanged_tick", "all services"),
    ("status_writes_per_service_per_min_quiet", "≤ 0.2 (one per 5 min)"),
    ("decisions_settled_after_s", "--metrics: until no decision moved for 2 intervals"),
    ("decided_scales_while_quiet", "decisions that moved while quiet"),
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
    parser.add_argument(
        "--profile-on-cpu",
        action="store_true",
        help="With --profile: only the thread holding the GIL at each sample (py-spy --gil), "
        "the operator's own CPU, not its threads' waits.",
    )
    parser.add_argument(
        "--shards",
        type=int,
        default=1,
        help="Operator processes, each watching its own namespace with --count services "
        "(disjoint namespace shards on one API server); the floor writes them all.",
    )
    parser.add_argument(
        "--metrics",
        action="store_true",
        help="Run the operators with a real Prometheus scraping vLLM metrics emulators at a "
        f"steady light load, and measure status writes on the quiet fleet over "
        f"{QUIET_WITH_METRICS_S:g} s (else over two intervals).",
    )
    parser.add_argument(
        "--controller-qps",
        type=float,
        default=CONTROLLER_API_QPS,
        help="The controller manager's --kube-api-qps, for the floor and the operators alike "
        f"(default {CONTROLLER_API_QPS:g}; 0: Kubernetes' default, 20).",
    )
    parser.add_argument(
        "--controller-burst",
        type=int,
        default=CONTROLLER_API_BURST,
        help="The controller manager's --kube-api-burst (default "
        f"{CONTROLLER_API_BURST}; 0: Kubernetes' default, 30).",
    )
    args = parser.parse_args()
    if args.profile is not None and _py_spy() is None:
        print("error: --profile needs py-spy (pip install py-spy)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="tokenscale-bench-"))
    cluster = Cluster(
        work / "cluster",
        crd_files=[CRD],
        controller_api_qps=args.controller_qps or None,
        controller_api_burst=args.controller_burst or None,
    )
    (work / "cluster").mkdir()
    cluster.start()
    metrics = MetricsFleet.start(work) if args.metrics else None
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig()))
        rounds = [
            one_round(
                cluster,
                api,
                args.count,
                n,
                work,
                args.interval,
                args.profile if n == 0 else None,
                args.profile_on_cpu,
                shards=args.shards,
                metrics=metrics,
                quiet_s=QUIET_WITH_METRICS_S if metrics is not None else None,
            )
            for n in range(args.rounds)
        ]
    finally:
        if metrics is not None:
            metrics.close()
        cluster.stop()
    shards = f" × {args.shards} shards" if args.shards > 1 else ""
    print(
        f"{args.count} InferenceServices{shards}, operator --interval {args.interval:g} s"
        f"{', metrics on' if metrics else ''}, controller manager --kube-api-qps "
        f"{args.controller_qps or 20:g} --kube-api-burst {args.controller_burst or 30}, "
        f"{args.rounds} round(s) (medians):"
    )
    extra = sorted({k for r in rounds for k in r if k.startswith("  ")})
    cut = [key for key, _ in ROWS].index("operator_cpu_s_per_create") + 1
    rows = [*ROWS[:cut], *((k, "") for k in extra), *ROWS[cut:]]
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
