#!/usr/bin/env bash
# Build the real helm CLI from the official helm.sh/helm/v3 Go module into a
# cache folder keyed by version, so the build happens once per machine and
# version (modelled on tests/cluster/build-controlplane.sh).
# A cached binary is reused without Go; Go is needed only to build.
# Prints the path of the helm binary on its last stdout line.
# Exit codes: 0 ok, 3 Go missing and helm not cached, other: build failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
module="$here/helmtool"
version="$(awk '/^require helm.sh\/helm\/v3/ {print $3}' "$module/go.mod")"
cache="${KUBE_TAILOR_CACHE:-$HOME/.cache/kube-tailor}"
out="$cache/helm-$version/bin"
mkdir -p "$out"

# As helm's own Makefile does: the real version (not "v3.22"), and the
# Kubernetes version helm assumes offline taken from its client-go (v0.N -> 1.N).
client_go="$(awk '$1 == "k8s.io/client-go" {print $2}' "$module/go.mod")"
k8s_minor="$(echo "$client_go" | cut -d. -f2)"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
ldflags="$ldflags -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags="$ldflags -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
done

if [ -x "$out/helm" ] && "$out/helm" version --template '{{.Version}}' 2>/dev/null | grep -qx "$version"; then
  echo "build-helm: helm $version cached" >&2
else
  if ! command -v go >/dev/null 2>&1; then
    echo "build-helm: Go is not installed; it is needed to build helm $version" >&2
    exit 3
  fi
  echo "build-helm: building helm $version" >&2
  start=$(date +%s)
  partial="$out/helm.$$.tmp"  # this run's own: two builds at once must not collide
  (cd "$module" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" \
    -o "$partial" helm.sh/helm/v3/cmd/helm)
  mv -f "$partial" "$out/helm"
  echo "build-helm: helm built in $(( $(date +%s) - start ))s" >&2
fi
echo "$out/helm"
