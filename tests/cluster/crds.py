"""Install the project's CRDs (deploy/crds/) into a real API server, once per cluster."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes.client.exceptions import ApiException

from tests.cluster.rawapi import RawApi
from tests.cluster.waiting import wait_until

CRD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _established(api: RawApi, name: str) -> bool:
    crd = api.get(f"{CRD_PATH}/{name}")
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def install_crds(api: RawApi) -> None:
    """Create both CRDs (409 means an earlier test did) and wait until they are established."""
    for manifest in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(manifest.read_text())
        try:
            api.create(CRD_PATH, crd)
        except ApiException as error:
            if error.status != 409:
                raise
        name = crd["metadata"]["name"]
        wait_until(lambda: _established(api, name), what=f"CRD {name} established")  # noqa: B023
