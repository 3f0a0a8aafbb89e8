"""The local control plane's controller manager: its client limits reach its command line only
where set (the benchmark at scale sets them; the tests and the playground keep Kubernetes'
defaults)."""

from pathlib import Path

from tokenscale.playground.cluster import Cluster


def _flags(cluster: Cluster, tmp_path: Path) -> dict[str, str]:
    args = cluster.controller_manager_args(tmp_path / "kube-controller-manager", 20123)
    assert args[0] == str(tmp_path / "kube-controller-manager")
    return dict(a.removeprefix("--").split("=", 1) for a in args[1:])


def test_the_defaults_pass_no_client_limit(tmp_path: Path) -> None:
    flags = _flags(Cluster(tmp_path), tmp_path)
    assert "kube-api-qps" not in flags
    assert "kube-api-burst" not in flags
    assert flags["secure-port"] == "20123"
    assert Path(flags["kubeconfig"]).is_file()


def test_a_raised_client_limit_reaches_the_command_line(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, controller_api_qps=100.0, controller_api_burst=100)
    flags = _flags(cluster, tmp_path)
    assert flags["kube-api-qps"] == "100"
    assert flags["kube-api-burst"] == "100"
    half = _flags(Cluster(tmp_path, controller_api_qps=12.5), tmp_path)
    assert half["kube-api-qps"] == "12.5"
    assert "kube-api-burst" not in half
