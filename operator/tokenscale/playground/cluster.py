"""A real Kubernetes control plane: etcd, kube-apiserver, kube-controller-manager.

Used by ``tokenscale playground`` and the integration tests. The binaries come from
``tokenscale/data/kube-env.sh`` (built once from Debian's Kubernetes 1.20 source, 6-8 minutes
on 2 cores, then cached under ``~/.cache/tokenscale/kube``). The API server authenticates
static bearer tokens; ``authorization`` is AlwaysAllow or RBAC. The controller manager runs
the garbage collector, the Deployment, ReplicaSet, ResourceQuota and HorizontalPodAutoscaler
controllers (pods stay Pending: there is no scheduler or kubelet; the playground's pod runner
stands in for one; an HPA has no metrics API, so it enforces only its replica bounds).
"""

import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import requests
import yaml

from tokenscale.kube.connect import connect
from tokenscale.playground.processes import Process, free_port, wait_for

ADMIN_TOKEN = "tokenscale-admin-token"
BUILD_MINUTES = "6-8"


def kube_cache_dir() -> Path:
    return Path(
        os.environ.get("TOKENSCALE_KUBE_CACHE") or Path.home() / ".cache" / "tokenscale" / "kube"
    )


def kube_binaries_cached() -> bool:
    """The same test as the build script's: both binaries, the OpenAPI marker and etcd."""
    cache = kube_cache_dir()
    return (
        all(
            os.access(cache / "bin" / b, os.X_OK)
            for b in ("kube-apiserver", "kube-controller-manager")
        )
        and (cache / ".openapi-v2").is_file()
        and shutil.which("etcd") is not None
    )


def kube_bin_dir(progress: Callable[[str], None] | None = None) -> Path:
    """Build the binaries once (the script prints their directory); ``progress`` gets the
    script's own progress lines while a first build runs."""
    script = Path(str(resources.files("tokenscale") / "data" / "kube-env.sh"))
    lines: list[str] = []
    with subprocess.Popen(
        ["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stderr is not None
        assert proc.stdout is not None
        for line in proc.stderr:
            lines.append(line.rstrip())
            if progress is not None and line.startswith("[kube-test-env]"):
                progress(line.removeprefix("[kube-test-env]").strip())
        out = proc.stdout.read()
    if proc.returncode != 0:
        tail = "\n".join(lines[-20:])
        raise RuntimeError(f"building the Kubernetes binaries failed:\n{tail}")
    return Path(out.strip().splitlines()[-1])


@dataclass
class Cluster:
    workdir: Path
    authorization: str = "AlwaysAllow"
    extra_tokens: dict[str, tuple[str, str]] = field(default_factory=dict)
    """token → (user, group) for other identities (RBAC tests)."""
    crd_files: list[Path] = field(default_factory=list)
    """Installed before the controller manager starts, so its garbage collector knows them."""
    processes: list[Process] = field(default_factory=list)
    port: int = 0
    apiserver_args: list[str] = field(default_factory=list)
    max_requests_inflight: int | None = None
    """Cap the API server's concurrent requests (read-only and mutating alike); past it the
    server answers 429 with ``Retry-After`` (tests of the operator's back-off)."""
    controller_api_qps: float | None = None
    """The controller manager's client rate limit, requests per second (``--kube-api-qps``;
    Kubernetes' default, 20, when None). A controller making its writes through a rate-limited
    client falls behind a create wave of thousands of Deployments (benchmarks/operator_load.py)."""
    controller_api_burst: int | None = None
    """The controller manager's client burst (``--kube-api-burst``; Kubernetes' default, 30,
    when None)."""

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca(self) -> Path:
        """The API server's self-signed serving certificate (generated into --cert-dir)."""
        return self.workdir / "certs" / "apiserver.crt"

    def kubeconfig(self, token: str = ADMIN_TOKEN, name: str = "admin") -> Path:
        path = self.workdir / f"kubeconfig-{name}"
        path.write_text(
            textwrap.dedent(f"""\
            apiVersion: v1
            kind: Config
            clusters:
            - name: test
              cluster: {{server: "{self.server}", certificate-authority: "{self.ca}"}}
            users:
            - name: {name}
              user: {{token: "{token}"}}
            contexts:
            - name: test
              context: {{cluster: test, user: {name}, namespace: default}}
            current-context: test
            """)
        )
        return path

    progress: Callable[[str], None] | None = None

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def start(self) -> "Cluster":
        bins = kube_bin_dir(self.progress)
        w = self.workdir
        (w / "certs").mkdir(parents=True, exist_ok=True)
        key = w / "sa.key"
        subprocess.run(
            ["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True
        )
        subprocess.run(
            ["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(w / "sa.pub")],
            check=True,
            capture_output=True,
        )
        tokens = [f"{ADMIN_TOKEN},admin,admin,system:masters"]
        for token, (user, group) in self.extra_tokens.items():
            tokens.append(f'{token},{user},{user},"{group}"')
        (w / "tokens.csv").write_text("\n".join(tokens) + "\n")

        client_port, peer_port = free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{client_port}"
        etcd = Process(
            "etcd",
            [
                "etcd",
                "--data-dir",
                str(w / "etcd"),
                "--listen-client-urls",
                etcd_url,
                "--advertise-client-urls",
                etcd_url,
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer_port}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer_port}",
            ],
            w,
            env={"ETCD_UNSUPPORTED_ARCH": "", "ETCD_LOG_LEVEL": "warn"},
        )
        self.processes.append(etcd)
        wait_for(lambda: requests.get(f"{etcd_url}/health", timeout=1).ok, 30, "etcd")

        self.port = free_port()
        self.apiserver_args = [
            str(bins / "kube-apiserver"),
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={w / 'certs'}",
            f"--token-auth-file={w / 'tokens.csv'}",
            f"--authorization-mode={self.authorization}",
            f"--service-account-key-file={w / 'sa.pub'}",
            f"--service-account-signing-key-file={key}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--disable-admission-plugins=ServiceAccount",
            "--enable-priority-and-fairness=false",
            "--logtostderr=true",
            "--v=1",
        ]
        if self.max_requests_inflight is not None:
            self.apiserver_args += [
                f"--max-requests-inflight={self.max_requests_inflight}",
                f"--max-mutating-requests-inflight={self.max_requests_inflight}",
            ]
        apiserver = Process("kube-apiserver", self.apiserver_args, w)
        self.processes.append(apiserver)
        self._wait_ready(apiserver)
        self._install_crds()
        manager = Process(
            "kube-controller-manager",
            self.controller_manager_args(bins / "kube-controller-manager", free_port()),
            w,
        )
        self.processes.append(manager)
        return self

    def controller_manager_args(self, binary: Path, port: int) -> list[str]:
        """The controller manager's command line: its own secure ``port``; the client limits
        only where set (Kubernetes' defaults otherwise)."""
        limits = []
        if self.controller_api_qps is not None:
            limits.append(f"--kube-api-qps={self.controller_api_qps:g}")
        if self.controller_api_burst is not None:
            limits.append(f"--kube-api-burst={self.controller_api_burst}")
        return [
            str(binary),
            *limits,
            f"--kubeconfig={self.kubeconfig()}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            "--port=0",
            "--controllers=garbagecollector,deployment,replicaset,namespace,resourcequota,"
            "horizontalpodautoscaling",
            # an HPA's own writes (its minReplicas floor needs no metrics) every 5 s
            "--horizontal-pod-autoscaler-sync-period=5s",
            "--concurrent-gc-syncs=5",
            "--logtostderr=true",
            "--v=1",
        ]

    def _wait_ready(self, apiserver: Process) -> None:
        def ready() -> bool:
            if not apiserver.alive():
                raise RuntimeError(f"kube-apiserver exited:\n{apiserver.tail()}")
            if not self.ca.exists():
                return False
            r = requests.get(
                f"{self.server}/readyz",
                verify=str(self.ca),
                timeout=2,
                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            )
            return r.status_code == 200

        wait_for(ready, 90, "kube-apiserver")

    def restart_apiserver(self, down_s: float = 0.0) -> None:
        """Stop the API server (SIGTERM), stay down ``down_s``, start it again on the same port
        and etcd: clients see refused connections, then the same data."""
        old = next(p for p in self.processes if p.name == "kube-apiserver")
        old.stop()
        time.sleep(down_s)
        fresh = Process("kube-apiserver", self.apiserver_args, self.workdir)
        self.processes[self.processes.index(old)] = fresh
        self._wait_ready(fresh)

    def _install_crds(self) -> None:
        from kubernetes import client  # noqa: PLC0415 - only needed here

        api = connect(str(self.kubeconfig()))
        ext = client.ApiextensionsV1Api(api)
        for path in self.crd_files:
            body: dict[str, Any] = yaml.safe_load(path.read_text())
            ext.create_custom_resource_definition(body)  # type: ignore[arg-type]

            def established(name: str = body["metadata"]["name"]) -> bool:
                got = ext.read_custom_resource_definition(name)
                return any(
                    c.type == "Established" and c.status == "True"
                    for c in (got.status.conditions if got.status else None) or []
                )

            wait_for(established, 30, f"CRD {path.name} established")

    def operator(
        self,
        name: str,
        namespace: str | None,
        interval_s: float,
        log_dir: Path,
        *extra: str,
        kubeconfig: Path | None = None,
    ) -> Process:
        """``tokenscale run`` as a real process against this cluster (one namespace, or all)."""
        scope = ["--namespace", namespace] if namespace else ["--all-namespaces"]
        return Process(
            name,
            [
                sys.executable,
                "-m",
                "tokenscale",
                "run",
                "--kubeconfig",
                str(kubeconfig or self.kubeconfig()),
                *scope,
                "--interval",
                f"{interval_s:g}",
                *extra,
            ],
            log_dir,
        )

    def stop(self) -> None:
        # the API server before etcd: the reverse order hangs the API server
        for process in reversed(self.processes):
            process.stop()
        self.processes.clear()
