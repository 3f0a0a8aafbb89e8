#!/usr/bin/env bash
# The real control plane's binaries for the tests and the playground: the script lives in the
# package (tokenscale/data/kube-env.sh) so an installed `tokenscale playground` can build them.
exec bash "$(dirname "$0")/../operator/tokenscale/data/kube-env.sh" "$@"
