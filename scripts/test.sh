#!/usr/bin/env bash
# Install everything the tests need on a fresh machine, then run lint, types, layering and tests.
# This is the README's test command and the only thing .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e '.[test]'

echo "== ruff";          ruff check operator tests benchmarks && ruff format --check operator tests benchmarks
echo "== mypy --strict"; mypy
echo "== import layers"; lint-imports
echo "== Prometheus (Debian's package; the tests start their own server)"
if ! command -v prometheus >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
fi
echo "== helm (real binary for the chart tests; cached)"
bash scripts/helm-bin.sh
echo "== test control plane (kube-apiserver, etcd, kube-controller-manager; cached)"
bash scripts/kube-test-env.sh
if [ "$#" -gt 0 ]; then
  echo "== pytest $*"; exec python -m pytest "$@"
fi
# The unit suite is CPU-bound and independent: one worker per core. The integration suite
# mostly waits on real servers, so it runs three workers even on two cores (450-480 s against
# 600-640 s on two, every test passing), its longest files first (tests/integration/conftest.py); each worker starts its own control plane and
# Prometheus, takes whole files (their module fixtures are shared) and picks its servers' ports
# from its own range (tests/conftest.py), so a server one test stops and restarts keeps its port.
rc=0
echo "== pytest tests/unit (a worker per core)"; python -m pytest -n auto --durations=15 tests/unit || rc=$?
echo "== pytest tests/integration (3 workers)";  python -m pytest -n 3 --dist loadfile --durations=25 tests/integration || rc=$?
exit "$rc"
