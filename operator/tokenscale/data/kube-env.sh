#!/usr/bin/env bash
# Build (once, cached) a real kube-apiserver and kube-controller-manager for the integration
# tests and `tokenscale playground`, from the Kubernetes 1.20 source Debian ships, and install etcd.
#
#   bash kube-env.sh                    # prints the directory holding the binaries
#
# Steps: apt packages; the source package via a
# private deb-src configuration derived from this machine's own apt sources; a GOPATH-mode
# build (GO111MODULE=off) after generating the OpenAPI definitions and swapping the vendored
# reflect2/json-iterator for Debian's newer copies (the vendored reflect2 crashes under Go 1.19).
set -euo pipefail

CACHE="${TOKENSCALE_KUBE_CACHE:-$HOME/.cache/tokenscale/kube}"
BIN="$CACHE/bin"
if [[ -x "$BIN/kube-apiserver" && -x "$BIN/kube-controller-manager" && -f "$CACHE/.openapi-v2" ]] \
   && command -v etcd >/dev/null; then
  echo "$BIN"
  exit 0
fi
mkdir -p "$CACHE" "$BIN"
log() { echo "[kube-test-env] $*" >&2; }

export DEBIAN_FRONTEND=noninteractive
if ! command -v go >/dev/null || ! command -v etcd >/dev/null || ! command -v openssl >/dev/null \
   || [[ ! -d /usr/share/gocode/src/github.com/modern-go/reflect2 ]]; then
  log "installing golang, etcd and Go sources from Debian"
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends golang-go etcd-server openssl ca-certificates \
    golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev >&2
fi

SRC_DIR="$CACHE/src"
mkdir -p "$SRC_DIR"
if ! ls "$SRC_DIR"/kubernetes_*.orig.tar.* >/dev/null 2>&1; then
  log "fetching the kubernetes source package"
  APT="$CACHE/apt"
  mkdir -p "$APT/lists/partial" "$APT/sources.list.d"
  sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
    > "$APT/sources.list.d/debian-src.sources"
  : > "$APT/sources.list"
  opts=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/sources.list.d"
        -o "Dir::State::Lists=$APT/lists")
  apt-get "${opts[@]}" update -qq >&2
  (cd "$SRC_DIR" && apt-get "${opts[@]}" source --download-only kubernetes >&2)
fi

export GOPATH="$CACHE/gopath"
export GOCACHE="$CACHE/gocache"
export GO111MODULE=off CGO_ENABLED=0 GOFLAGS=-mod=vendor
K8S="$GOPATH/src/k8s.io/kubernetes"
if [[ ! -f "$K8S/.tokenscale-prepared" ]]; then
  log "unpacking and preparing the source tree"
  rm -rf "$K8S"
  mkdir -p "$K8S"
  tar -xf "$(ls "$SRC_DIR"/kubernetes_*.orig.tar.* | head -1)" -C "$K8S" --strip-components=1
  for pkg in github.com/modern-go/reflect2 github.com/json-iterator/go; do
    rm -rf "$K8S/vendor/$pkg"
    cp -r "/usr/share/gocode/src/$pkg" "$K8S/vendor/$pkg"
  done
  touch "$K8S/.tokenscale-prepared"
fi

cd "$K8S"
export GOFLAGS=""
if [[ ! -f "$CACHE/.openapi-v2" ]]; then
  rm -f pkg/generated/openapi/zz_generated.openapi.go "$BIN/kube-apiserver"
  log "generating OpenAPI definitions"
  go build -o "$CACHE/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
  # every package with the tag on its doc.go or on a type (resource.Quantity is tagged per type)
  pkgs=$(grep -rlE --include='*.go' --exclude='*_test.go' '\+k8s:openapi-gen=(true|package)' \
      pkg staging/src/k8s.io vendor/github.com vendor/sigs.k8s.io 2>/dev/null \
    | xargs -n1 dirname | sort -u \
    | sed -e 's#^vendor/##' -e 's#^staging/src/##' -e 's#^pkg/#k8s.io/kubernetes/pkg/#' \
    | paste -sd, -)
  "$CACHE/openapi-gen" --input-dirs "$pkgs" \
    --output-package k8s.io/kubernetes/pkg/generated/openapi \
    --output-base "$GOPATH/src" -O zz_generated.openapi \
    --go-header-file hack/boilerplate/boilerplate.generatego.txt \
    --report-filename /dev/null >&2
  touch "$CACHE/.openapi-v2"
fi
for cmd in kube-apiserver kube-controller-manager; do
  if [[ ! -x "$BIN/$cmd" ]]; then
    log "building $cmd (a few minutes on 2 cores)"
    go build -o "$BIN/$cmd" "./cmd/$cmd"
  fi
done
echo "$BIN"
