#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager and kube-scheduler from the
# official Kubernetes Go modules into a cache folder keyed by version, so the
# (slow, ~10 min cold) build happens once per machine and version.
# Prints the folder holding the binaries on its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
module="$here/controlplane"
version="$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$module/go.mod")"
cache="${KUBE_TAILOR_CACHE:-$HOME/.cache/kube-tailor}"
out="$cache/kubernetes-$version/bin"
mkdir -p "$out"
if ! command -v go >/dev/null 2>&1; then
  echo "build-controlplane: Go is not installed; the real-cluster tests need it" >&2
  exit 3
fi
cd "$module"
for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
  if [ -x "$out/$cmd" ]; then
    echo "build-controlplane: $cmd $version cached" >&2
    continue
  fi
  echo "build-controlplane: building $cmd $version" >&2
  start=$(date +%s)
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd"
  mv "$out/$cmd.tmp" "$out/$cmd"
  echo "build-controlplane: $cmd built in $(( $(date +%s) - start ))s" >&2
done
echo "$out"
