"""Many services, one API server (real kube-apiserver): reads from the watch cache, one
reconcile per change, back-off on 429, namespace shards."""

import re
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.helpers import PROFILE, manifest
from tests.integration.conftest import CRD_FILE, GROUP, PLURAL, VERSION, Objects
from tokenscale.controller.handlers import KOPF_PREFIX
from tokenscale.kube.connect import connect
from tokenscale.kube.throttle import ClientLimits, install
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process, free_port, wait_for

pytestmark = pytest.mark.integration
SAMPLE = re.compile(r"^(tokenscale_[a-z_]+)\{([^}]*)\} ([0-9.e+]+)$")


def _counters(port: int) -> dict[str, float]:
    """requests (the operator's own API calls), reconciles:<trigger>, ticks."""
    out: dict[str, float] = {}
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith("tokenscale_evaluation_duration_seconds_count"):
            out["ticks"] = float(line.split()[-1])
        m = SAMPLE.match(line)
        if m is None:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if m.group(1) == "tokenscale_api_requests_total":
            out["requests"] = out.get("requests", 0.0) + float(m.group(3))
            by_method = f"method:{labels['method']}"
            out[by_method] = out.get(by_method, 0.0) + float(m.group(3))
            if labels["code"] in ("409", "429"):
                out[labels["code"]] = out.get(labels["code"], 0.0) + float(m.group(3))
        elif m.group(1) == "tokenscale_reconciles_total":
            out[f"reconciles:{labels['trigger']}"] = float(m.group(3))
    return out


def _ready(objects: Objects, names: list[str]) -> bool:
    return all(
        objects.deployment(n) is not None and (objects.get(n).get("status") or {}).get("plan")
        for n in names
    )


def test_a_create_is_one_reconcile_and_an_unchanged_tick_asks_the_api_nothing(
    objects: Objects, namespace: str, start_operator: Callable[..., Process]
) -> None:
    port = free_port()
    op = start_operator(namespace, "--metrics-port", str(port))  # a 2 s interval
    wait_for(lambda: _counters(port).get("ticks", 0.0) >= 1, 60, "the operator's first tick")
    primed = _counters(port)  # the watch cache's LISTs and the PDB API discovery
    names = [f"svc-{i}" for i in range(3)]
    for name in names:
        objects.create({**manifest(), "metadata": {"name": name}})
    wait_for(lambda: _ready(objects, names), 60, "Deployments and plans")

    def reported() -> bool:  # the Deployment controller's first report on each Deployment
        return all((objects.deployment(n).status.conditions or []) for n in names)

    wait_for(reported, 60, "the Deployment controller's reports")
    time.sleep(3)  # their watch events reach the operator
    settled = _counters(port)
    assert settled["reconciles:create"] == len(names), op.tail()
    # the Deployment controller's first report changes nothing the status counts: no
    # reconcile, no second status write
    assert settled.get("reconciles:owned", 0.0) == 0, settled
    assert objects.deployment("svc-0").spec.replicas >= 1

    # per create: 3 GETs of names not yet cached, 3 applies, 1 event, 1 status write; a
    # status 409 (Kopf's own annotation patch came first) adds a re-read and a write
    def spent(key: str) -> float:
        return settled.get(key, 0.0) - primed.get(key, 0.0)

    n, conflicts = len(names), spent("409")
    assert spent("method:PATCH") == 3 * n, settled  # the applies: no GET-then-apply loops
    assert spent("method:POST") == n, settled  # one event each
    assert spent("method:PUT") == n + conflicts, settled  # one status write each
    assert spent("requests") <= 8 * n + 2 * conflicts, settled
    for name in names:  # Kopf's last-handled configuration is in memory: no PATCH of ours
        annotations = objects.get(name)["metadata"].get("annotations") or {}
        assert not [k for k in annotations if k.startswith(KOPF_PREFIX)], annotations
    created = [
        e for e in objects.core.list_namespaced_event(namespace).items if e.reason == "Created"
    ]
    assert len(created) == len(names)  # one event names the Deployment, Service and PDB
    assert all("Service" in e.message and "PodDisruptionBudget" in e.message for e in created)
    wait_for(lambda: _counters(port)["ticks"] >= settled["ticks"] + 3, 30, "three more ticks")
    quiet = _counters(port)
    assert quiet["requests"] == settled["requests"], (settled, quiet)
    assert quiet.get("reconciles:tick", 0.0) == settled.get("reconciles:tick", 0.0)


def test_drift_is_repaired_from_the_watch_without_waiting_for_a_tick(
    objects: Objects, namespace: str, cluster: Cluster, tmp_path: Path
) -> None:
    port = free_port()
    op = cluster.operator(
        "op-slow-tick", namespace, 600, tmp_path, "--metrics-port", str(port)
    )  # one tick at start, then none for ten minutes
    try:
        objects.create(manifest())
        wait_for(lambda: _ready(objects, ["test"]), 60, "Deployment and plan")
        want = objects.deployment("test").spec.replicas
        objects.apps.patch_namespaced_deployment_scale(
            "test", namespace, {"spec": {"replicas": want + 3}}
        )
        wait_for(lambda: objects.deployment("test").spec.replicas == want, 30, "scale undone")
        objects.core.delete_namespaced_service("test", namespace, _preload_content=False)

        def service_back() -> bool:
            try:
                objects.core.read_namespaced_service("test", namespace)
            except ApiException as exc:
                if exc.status == 404:
                    return False
                raise
            return True

        wait_for(service_back, 30, "the deleted Service re-created")
        reasons = [e.reason for e in objects.events("test")]
        assert "DriftCorrected" in reasons
        assert _counters(port).get("reconciles:tick", 0.0) <= 1.0  # the repairs were events
    finally:
        op.stop()


def test_an_unwatched_input_is_reread_within_the_bound_and_nothing_else_is(
    objects: Objects, namespace: str, cluster: Cluster, tmp_path: Path
) -> None:
    """A plan-only operator re-reads what it does not watch (a profileRef's ConfigMap) once
    per ``--unwatched-resync``, not every tick and not never: a ConfigMap edit reaches the
    plan within that bound, and a service reading nothing unwatched is not reconciled."""
    bound_s = 4.0
    op = cluster.operator(
        "op-unwatched", namespace, 1, tmp_path, "--log-level", "DEBUG",
        "--unwatched-resync", f"{bound_s:g}",
    )  # fmt: skip
    try:
        objects.core.create_namespaced_config_map(
            namespace,
            client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name="bench"),
                data={"profile.yaml": yaml.safe_dump(PROFILE)},
            ),
        )
        objects.create(manifest(profileRef={"configMapName": "bench", "key": "profile.yaml"}))
        objects.create({**manifest(), "metadata": {"name": "plain"}})
        wait_for(lambda: _ready(objects, ["test", "plain"]), 60, "Deployments and plans")
        assert objects.get("test")["status"]["plan"]["maxConcurrencyPerReplica"] == 32

        def ticks(name: str) -> int:
            pattern = f"reconciled {namespace}/{name} (tick)"
            return op.log_path.read_text().count(pattern)

        time.sleep(3)  # the Deployment controller's first reports
        before = {n: ticks(n) for n in ("test", "plain")}
        quiet_s = 3 * bound_s
        time.sleep(quiet_s)  # 12 ticks of 1 s
        runs = ticks("test") - before["test"]
        assert 1 <= runs <= quiet_s / bound_s + 1, (runs, op.tail())
        assert ticks("plain") == before["plain"], op.tail()

        # measured only up to concurrency 16: the plan can use no more
        steps = PROFILE["steps"][:2]
        smaller = {**PROFILE, "steps": steps, "kneeConcurrency": 16, "operatingConcurrency": 16}
        objects.core.patch_namespaced_config_map(
            "bench", namespace, {"data": {"profile.yaml": yaml.safe_dump(smaller)}}
        )
        edited = time.monotonic()
        wait_for(
            lambda: objects.get("test")["status"]["plan"]["maxConcurrencyPerReplica"] == 16,
            bound_s + 10,
            "the ConfigMap's edit in the plan",
        )
        assert time.monotonic() - edited <= bound_s + 3  # the bound, a tick and the write
    finally:
        op.stop()


# -- 429: a real API server that admits two requests at a time -------------------------------


USER_TOKEN = "fleet-user-token"  # a throwaway credential for the test cluster
"""A user outside system:masters: the API server's in-flight limit exempts that group."""


@pytest.fixture(scope="module")
def busy_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(
        tmp_path_factory.mktemp("busy-cluster"),
        crd_files=[CRD_FILE],
        max_requests_inflight=2,
        extra_tokens={USER_TOKEN: ("fleet-user", "fleet")},
    )
    try:
        c.start()
        yield c
    finally:
        c.stop()


def _user_client(cluster: Cluster) -> client.ApiClient:
    """The non-master user's client, with a connection per hammering thread."""
    cfg = client.Configuration()
    path = cluster.kubeconfig(USER_TOKEN, "fleet")
    config.load_kube_config(config_file=str(path), client_configuration=cfg)
    cfg.connection_pool_maxsize = 32
    return client.ApiClient(cfg)


def _hammer(api: client.ApiClient, namespace: str, tag: str) -> list[int]:
    """48 ConfigMap creates and reads from 24 threads at once: each call's HTTP status."""
    core = client.CoreV1Api(api)

    def one(i: int) -> int:
        try:
            core.create_namespaced_config_map(
                namespace, {"metadata": {"name": f"{tag}-{i}"}, "data": {"x": "y" * 1000}}
            )
            core.list_namespaced_config_map(namespace)
        except ApiException as exc:
            return int(exc.status)
        return 200

    with ThreadPoolExecutor(24) as pool:
        return list(pool.map(one, range(48)))


def test_429s_from_the_api_server_are_retried_after_its_retry_after(
    busy_cluster: Cluster,
) -> None:
    admin = connect(str(busy_cluster.kubeconfig()))
    namespace = f"busy-{uuid.uuid4().hex[:6]}"
    wait_for(
        lambda: bool(client.CoreV1Api(admin).create_namespace({"metadata": {"name": namespace}})),
        30,
        "a namespace on the busy server",
    )
    plain = _hammer(_user_client(busy_cluster), namespace, "plain")
    assert 429 in plain, "the API server did not throttle: the test proves nothing"

    statuses: list[int] = []
    polite = _user_client(busy_cluster)
    install(polite, ClientLimits(qps=0, burst=1, max_retries=30), lambda _m, s: statuses.append(s))
    answers = _hammer(polite, namespace, "polite")
    assert answers == [200] * 48
    assert statuses.count(429) > 0  # it was throttled, and waited it out
    print(
        f"429s without back-off: {plain.count(429)} of 48; retried with it: {statuses.count(429)}"
    )


def test_the_operator_reconciles_everything_on_a_throttling_api_server(
    busy_cluster: Cluster, tmp_path: Path
) -> None:
    admin = connect(str(busy_cluster.kubeconfig()))
    namespace = f"ops-{uuid.uuid4().hex[:6]}"
    wait_for(
        lambda: bool(client.CoreV1Api(admin).create_namespace({"metadata": {"name": namespace}})),
        30,
        "a namespace on the busy server",
    )
    port = free_port()
    op = busy_cluster.operator(
        "op-busy",
        namespace,
        5,
        tmp_path,
        "--metrics-port",
        str(port),
        "--api-qps",
        "0",
        kubeconfig=busy_cluster.kubeconfig(USER_TOKEN, "fleet"),
    )
    objects = Objects(admin, namespace)
    names = [f"svc-{i}" for i in range(12)]
    try:
        wait_for(lambda: "ticks" in _counters(port), 60, "the operator's /metrics")

        def create(name: str) -> None:
            body = {**manifest(), "metadata": {"name": name, "namespace": namespace}}
            wait_for(
                lambda: bool(
                    objects.custom.create_namespaced_custom_object(
                        GROUP, VERSION, namespace, PLURAL, body
                    )
                ),
                30,
                f"create {name}",
            )

        with ThreadPoolExecutor(6) as pool:
            list(pool.map(create, names))
        wait_for(lambda: op.alive() and _ready(objects, names), 120, "every service reconciled")
        print(f"the operator's 429s, each retried: {_counters(port).get('429', 0.0):g}")
    finally:
        op.stop()


# -- shards ----------------------------------------------------------------------------------


def _shard(
    cluster: Cluster, tmp_path: Path, lease_ns: str, shard: str, namespaces: list[str]
) -> Process:
    extra = [f"--namespace={ns}" for ns in namespaces[1:]]
    return cluster.operator(
        f"shard-{shard}",
        namespaces[0],
        2,
        tmp_path,
        *extra,
        "--leader-elect",
        "--leader-election-namespace",
        lease_ns,
        "--leader-election-identity",
        f"{shard}-0",
        "--leader-election-name",
        f"shard-{shard}",
        "--lease-duration",
        "6",
        "--renew-deadline",
        "4",
        "--retry-period",
        "1",
    )


def test_two_shards_each_lead_and_reconcile_their_own_and_an_overlap_refuses_to_start(
    api: client.ApiClient, cluster: Cluster, tmp_path: Path
) -> None:
    core = client.CoreV1Api(api)
    tag = uuid.uuid4().hex[:6]
    lease_ns, na, nb, nc = (f"{p}-{tag}" for p in ("leases", "sa", "sb", "sc"))
    for ns in (lease_ns, na, nb, nc):
        core.create_namespace({"metadata": {"name": ns}})
    a = _shard(cluster, tmp_path, lease_ns, "a", [na])
    b = _shard(cluster, tmp_path, lease_ns, "b", [nb])
    started: list[Process] = [a, b]
    try:
        per_ns = {ns: Objects(api, ns) for ns in (na, nb, nc)}
        for objects in per_ns.values():
            objects.create(manifest())
        wait_for(lambda: _ready(per_ns[na], ["test"]), 60, "shard a's service")
        wait_for(lambda: _ready(per_ns[nb], ["test"]), 60, "shard b's service")

        leases = client.CoordinationV1Api(api)
        for shard, ns in (("a", na), ("b", nb)):
            lease = leases.read_namespaced_lease(f"shard-{shard}", lease_ns)
            assert lease.spec.holder_identity == f"{shard}-0"
            assert lease.metadata.annotations["tokenscale.io/namespaces"] == ns

        # a third operator claiming b's namespace (and a free one) must not start
        c = _shard(cluster, tmp_path, lease_ns, "c", [nc, nb])
        started.append(c)
        code = c.proc.wait(timeout=60)
        log = c.log_path.read_text()
        assert code == 2, log
        assert f"{nb} already held by shard Lease {lease_ns}/shard-b" in log, log
        assert "Traceback" not in log
        assert leases.read_namespaced_lease("shard-b", lease_ns).spec.holder_identity == "b-0"

        time.sleep(4)  # two intervals of both shards
        assert per_ns[nc].deployment("test") is None  # in no shard: handled by nobody
        assert not per_ns[nc].get("test").get("status")
        assert f"{nb}/" not in a.log_path.read_text()
        assert f"{na}/" not in b.log_path.read_text()
        assert a.alive()
        assert b.alive()
    finally:
        for proc in started:
            proc.stop()
        for ns in (lease_ns, na, nb, nc):
            core.delete_namespace(ns)
