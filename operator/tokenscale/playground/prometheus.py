"""A real Prometheus server (Debian's package), scraping every second (or as asked): the
playground's and the integration tests'.

Targets come from a file_sd file the test rewrites; each target carries the ``namespace`` and
``inferenceservice`` labels the operator queries by (a cluster's PodMonitor attaches them from
the pod label ``tokenscale.io/inferenceservice``).
"""

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import requests

from tokenscale.playground.processes import Process, free_port, wait_for

SCRAPE_MODELLED_S = 5.0
"""The playground's scrape interval in modelled seconds (from ×5 to ×20)."""
SCRAPE_WALL_RANGE_S = (0.25, 1.0)
"""The shortest and the longest scrape interval in wall seconds."""


def scrape_interval_wall_s(speed: float) -> float:
    """Prometheus' scrape interval for the playground at ``speed`` (wall seconds, whole
    milliseconds): ``SCRAPE_MODELLED_S`` modelled seconds within ``SCRAPE_WALL_RANGE_S`` (1 wall
    second at ×5 and below, 0.25 s at ×20 and above). Scraping once a wall second at every
    speed made a sample 20 modelled seconds apart at ×20, a whole decision interval: a new
    replica's first sample came up to a decision later than Ready, and a 2-minute rate read six
    samples at phases of their own."""
    lo, hi = SCRAPE_WALL_RANGE_S
    return round(min(hi, max(lo, SCRAPE_MODELLED_S / speed)), 3)


def ensure_prometheus() -> str:
    path = shutil.which("prometheus")
    if path is None:
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "prometheus"],
            check=True,
            capture_output=True,
            env={"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/bin"},
        )
        path = shutil.which("prometheus")
    assert path, "prometheus is not installed"
    return path


class PrometheusServer:
    def __init__(
        self, workdir: Path, rule_files: tuple[Path, ...] = (), scrape_interval_s: float = 1.0
    ) -> None:
        """``rule_files``: Prometheus rule files to load (alerting rules evaluated every
        second); ``scrape_interval_s``: how often the targets are scraped."""
        self.workdir = workdir
        self.rule_files = rule_files
        self.scrape_interval_s = scrape_interval_s
        self.port = free_port()
        self.targets_file = workdir / "targets.json"
        self.targets: dict[str, dict[str, str]] = {}
        self.process: Process | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "PrometheusServer":
        binary = ensure_prometheus()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._write_targets()
        every = f"{round(self.scrape_interval_s * 1000)}ms"
        config = self.workdir / "prometheus.yml"
        config.write_text(
            textwrap.dedent(f"""\
            global: {{scrape_interval: {every}, scrape_timeout: {every}, evaluation_interval: 1s}}
            rule_files: {json.dumps([str(f) for f in self.rule_files])}
            scrape_configs:
              - job_name: vllm
                file_sd_configs: [{{files: ["{self.targets_file}"], refresh_interval: 1s}}]
            """)
        )
        self.process = Process(
            f"prometheus-{self.port}",
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            self.workdir,
        )
        wait_for(lambda: requests.get(f"{self.url}/-/ready", timeout=1).ok, 30, "prometheus")
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def add_target(
        self,
        target: str,
        namespace: str | None,
        service: str | None,
        pod: str | None = None,
        role: str | None = None,
    ) -> None:
        """A vLLM pod (with the labels the operator queries by; ``role``: a prefill/decode
        pod's ``llm-d.ai/role``, as the PodMonitor copies it), or, with None, a plain target
        (the operator itself, whose series carry their own namespace/inferenceservice labels)."""
        labels = (
            {"namespace": namespace, "inferenceservice": service} if namespace and service else {}
        )
        if pod:
            labels["pod"] = pod
        if role:
            labels["role"] = role
        self.targets[target] = labels
        self._write_targets()

    def add_labelled_target(self, target: str, labels: dict[str, str]) -> None:
        """A target with exactly these labels (an endpoint picker: its ``namespace``; its
        series carry their own ``inference_pool``)."""
        self.targets[target] = dict(labels)
        self._write_targets()

    def remove_target(self, target: str) -> None:
        self.targets.pop(target, None)
        self._write_targets()

    def _write_targets(self) -> None:
        groups = [{"targets": [t], "labels": labels} for t, labels in self.targets.items()]
        tmp = self.targets_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(groups))
        tmp.replace(self.targets_file)

    def metadata(self) -> dict[str, list[dict[str, str]]]:
        r = requests.get(f"{self.url}/api/v1/metadata", timeout=5)
        r.raise_for_status()
        return dict(r.json()["data"])

    def firing_alerts(self) -> list[dict[str, str]]:
        """The labels of every alert in the ``firing`` state (``/api/v1/alerts``)."""
        r = requests.get(f"{self.url}/api/v1/alerts", timeout=5)
        r.raise_for_status()
        return [dict(a["labels"]) for a in r.json()["data"]["alerts"] if a.get("state") == "firing"]

    def query(self, promql: str) -> list[dict[str, object]]:
        r = requests.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=5)
        r.raise_for_status()
        return list(r.json()["data"]["result"])
