"""examples/: every VPA the docs show is accepted by a real API server with the project's
CRDs, passes the webhook's own checks, and is served by the recommender it names; its
kube-tailor annotations are settings the service would take."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from recommender.forecast.settings import ForecastSettings
from recommender.overrides import settings_with
from recommender.service.policies import FORECAST_SET_ANNOTATION, annotated_pairs
from tailor.api.crd import DEFAULT_RECOMMENDER_NAME
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.api.vpa_validation import vpa_problem
from tailor.matching import is_served_by
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import create_namespace
from tests.cluster.rawapi import RawApi

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILES = sorted(EXAMPLES.glob("*.yaml"))
VPAS = "/apis/autoscaling.k8s.io/v1/namespaces/{namespace}/verticalpodautoscalers"


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def test_there_is_an_example_per_documented_use() -> None:
    modes = {d["spec"]["updatePolicy"]["updateMode"] for p in FILES for d in documents(p)}
    assert {"Off", "InPlace", "InPlaceOrRecreate"} <= modes
    names = {p.stem for p in FILES}
    assert {"recommend-only", "in-place", "in-place-or-recreate", "follow-the-schedule"} <= names
    assert "beside-upstream" in names


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_example_passes_the_webhooks_checks_and_its_annotations_parse(path: Path) -> None:
    for document in documents(path):
        assert document["kind"] == "VerticalPodAutoscaler"
        assert vpa_problem(document, is_create=True) is None
        vpa = VerticalPodAutoscaler.model_validate(document)
        pairs = annotated_pairs(vpa, FORECAST_SET_ANNOTATION)
        if pairs is not None:
            assert settings_with(pairs, ForecastSettings(), "forecast") != ForecastSettings()


def test_beside_upstream_each_vpa_has_one_recommender() -> None:
    served = {
        vpa.metadata.name: (
            is_served_by(vpa, "kube-tailor", is_default=False),
            is_served_by(vpa, DEFAULT_RECOMMENDER_NAME, is_default=False),
        )
        for vpa in map(
            VerticalPodAutoscaler.model_validate, documents(EXAMPLES / "beside-upstream.yaml")
        )
    }
    assert served == {"checkout-upstream": (False, True), "cart": (True, False)}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_real_api_server_stores_the_example_as_written(kube_api: RawApi, path: Path) -> None:
    install_crds(kube_api)
    for document in documents(path):
        namespace = document["metadata"]["namespace"]
        with contextlib.suppress(ApiException):  # 409: an earlier example made it
            create_namespace(kube_api, namespace)
        collection = VPAS.format(namespace=namespace)
        stored = kube_api.request("POST", collection, document, query={"dryRun": "All"})
        assert stored["spec"] == document["spec"]
        assert stored["metadata"].get("annotations") == document["metadata"].get("annotations")
