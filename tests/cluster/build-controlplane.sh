#!/usr/bin/env bash
# Build kube-apiserver, kube-controller-manager and kube-scheduler from the
# official Kubernetes Go modules into a cache folder keyed by version, so the
# (slow, ~7-10 min cold) build happens once per machine and version.
# Cached binaries are reused without Go; Go is needed only to build.
# Prints the folder holding the binaries on its last stdout line.
# Exit codes: 0 ok, 3 Go missing and binaries not cached, other: build failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
module="$here/controlplane"
version="$(awk '/^require k8s.io\/kubernetes/ {print $3}' "$module/go.mod")"
cache="${KUBE_TAILOR_CACHE:-$HOME/.cache/kube-tailor}"
out="$cache/kubernetes-$version/bin"
mkdir -p "$out"

# The binaries report the real version (not v0.0.0-master), so clients that
# check the server version (e.g. for in-place resize support) see 1.36.x.
minor="$(echo "$version" | cut -d. -f2)"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags="$ldflags -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags="$ldflags -X $pkg.gitTreeState=clean"
done

is_cached() {
  [ -x "$out/$1" ] && "$out/$1" --version 2>/dev/null | grep -q "Kubernetes $version\$"
}

for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
  if is_cached "$cmd"; then
    echo "build-controlplane: $cmd $version cached" >&2
    continue
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "build-controlplane: Go is not installed; it is needed to build $cmd $version" >&2
    exit 3
  fi
  echo "build-controlplane: building $cmd $version" >&2
  start=$(date +%s)
  # a file of this run's own, renamed into place: two builds at once (a CI run beside a
  # developer's tests) must not move each other's half-written binaries
  partial="$out/$cmd.$$.tmp"
  (cd "$module" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" \
    -o "$partial" "k8s.io/kubernetes/cmd/$cmd")
  mv -f "$partial" "$out/$cmd"
  echo "build-controlplane: $cmd built in $(( $(date +%s) - start ))s" >&2
done
echo "$out"
