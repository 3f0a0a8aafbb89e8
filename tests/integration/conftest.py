"""Fixtures: a real control plane (session), the CRD, a namespace per test, the operator."""

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from tests.helpers import ROOT
from tests.support.vllm_emulator import VllmMetricsEmulator
from tokenscale.playground.cluster import Cluster
from tokenscale.playground.processes import Process
from tokenscale.playground.prometheus import PrometheusServer

CRD_FILE = ROOT / "crds" / "inferenceservices.tokenscale.io.yaml"
# Other projects' CRDs (their 1.20-compatible copies), served by the session's API server as on a
# cluster that runs them: LeaderWorkerSets for replicas that span nodes, KEDA's ScaledObjects,
# the Gateway API Inference Extension's InferencePools, llm-d's InferenceObjectives.
LWS_CRD = ROOT / "tests" / "fixtures" / "crds" / "leaderworkersets.x-k8s.io.k8s120.yaml"
KEDA_CRD = ROOT / "tests" / "fixtures" / "crds" / "keda.sh_scaledobjects.k8s120.yaml"
POOL_CRD = (
    ROOT / "tests" / "fixtures" / "crds" / "inference.networking.k8s.io_inferencepools.k8s120.yaml"
)
# llm-d's InferenceObjectives (one per spec.workload.classes entry): installs unchanged on 1.20.
OBJECTIVE_CRD = ROOT / "tests" / "fixtures" / "crds" / "llm-d.ai_inferenceobjectives.upstream.yaml"
GROUP, VERSION, PLURAL = "tokenscale.io", "v1alpha1", "inferenceservices"


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(
        tmp_path_factory.mktemp("cluster"),
        crd_files=[CRD_FILE, LWS_CRD, KEDA_CRD, POOL_CRD, OBJECTIVE_CRD],
    )
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="session")
def api(cluster: Cluster) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig()))


@pytest.fixture(scope="session")
def crd(api: client.ApiClient) -> dict[str, Any]:
    """The committed CRD, installed by the cluster fixture before the controller manager."""
    body: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return body


@pytest.fixture
def namespace(api: client.ApiClient, crd: dict[str, Any]) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


LONGEST_FILES = (
    "test_autoscaling.py",
    "test_operator.py",
    "test_fleet.py",
    "test_scale_to_zero.py",
    "test_status_writes.py",
    "test_replicas_contested.py",
    "test_variants.py",
    "test_ownership.py",
)
"""The eight slowest files (40–135 s each by ``--durations`` on this 2-core machine), longest
first: handed out first, so ``--dist loadfile`` does not start one of them last on a worker while
the others sit idle. A file not listed keeps its place after them."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (:data:`LONGEST_FILES`), every file's tests in their order; the
    same order on every worker, as pytest-xdist requires."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


OPERATOR_LOG_LINES = 80


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report ends with the tail of each operator log it started: a race seen
    once in CI is then read from the log, not guessed at."""
    outcome: Any = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        for proc in getattr(item, "operators", []):
            tail = proc.tail(OPERATOR_LOG_LINES)
            report.sections.append((f"{proc.name} log (last {OPERATOR_LOG_LINES} lines)", tail))


@pytest.fixture
def start_operator(
    cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Process]]:
    started: list[Process] = []
    logged: list[Process] = request.node.__dict__.setdefault("operators", [])  # on a failure

    def start(namespace: str, *extra: str, name: str = "operator") -> Process:
        proc = cluster.operator(f"{name}-{len(started)}", namespace, 2, tmp_path, *extra)
        started.append(proc)
        logged.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


class Objects:
    """Small helpers over the API for the tests."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.ns = namespace
        self.custom = client.CustomObjectsApi(api)
        self.apps = client.AppsV1Api(api)
        self.core = client.CoreV1Api(api)
        self.policy = client.PolicyV1Api(api)

    def create(self, manifest: dict[str, Any]) -> dict[str, Any]:
        body = {**manifest, "metadata": {**manifest["metadata"], "namespace": self.ns}}
        return dict(
            self.custom.create_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, body)
        )

    def get(self, name: str) -> dict[str, Any]:
        return dict(self.custom.get_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, name))

    def patch_spec(self, name: str, spec_patch: dict[str, Any]) -> None:
        self.custom.patch_namespaced_custom_object(
            GROUP, VERSION, self.ns, PLURAL, name, {"spec": spec_patch}
        )

    def delete(self, name: str) -> None:
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, self.ns, PLURAL, name)

    def deployment(self, name: str) -> Any:
        try:
            return self.apps.read_namespaced_deployment(name, self.ns)
        except client.exceptions.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def condition(self, name: str, ctype: str) -> dict[str, Any] | None:
        conditions = (self.get(name).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == ctype), None)

    def events(self, name: str) -> list[Any]:
        items = self.core.list_namespaced_event(self.ns).items
        return [e for e in items if e.involved_object.name == name]


@pytest.fixture
def start_metrics_operator(
    cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[..., Process]]:
    """An operator reading Prometheus with short windows (gauges 5 s, rates 10 s), so a test
    sees the load it sets within a few ticks; ``extra`` flags are passed on."""
    started: list[Process] = []
    logged: list[Process] = request.node.__dict__.setdefault("operators", [])  # on a failure

    def start(namespace: str, prometheus_url: str, *extra: str, interval_s: float = 2) -> Process:
        proc = cluster.operator(
            f"operator-metrics-{len(started)}",
            namespace,
            interval_s,
            tmp_path,
            "--prometheus-url",
            prometheus_url,
            "--metrics-gauge-window",
            "5s",
            "--metrics-rate-window",
            "10s",
            *extra,
        )
        started.append(proc)
        logged.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture
def objects(api: client.ApiClient, namespace: str) -> Objects:
    return Objects(api, namespace)


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusServer]:
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def emulators(prometheus: PrometheusServer) -> Iterator[Callable[..., VllmMetricsEmulator]]:
    """Start vLLM metrics emulators (one per pod) registered as Prometheus targets."""
    started: list[VllmMetricsEmulator] = []

    def start(namespace: str, service: str, **kwargs: Any) -> VllmMetricsEmulator:
        emulator = VllmMetricsEmulator(**kwargs).start()
        started.append(emulator)
        prometheus.add_target(emulator.target, namespace, service)
        return emulator

    yield start
    for emulator in started:
        prometheus.remove_target(emulator.target)
        emulator.stop()
