"""The CRD manifests in deploy/crds: names, structural schemas, and no field of ours pruned."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tailor.api import (
    CHECKPOINT_CRD_NAME,
    CHECKPOINT_KIND,
    CHECKPOINT_PLURAL,
    GROUP,
    VERSION,
    VPA_CRD_NAME,
    VPA_KIND,
    VPA_PLURAL,
    ContainerScalingMode,
    ControlledValues,
    EvictionChangeRequirement,
    UpdateMode,
    VerticalPodAutoscaler,
    VerticalPodAutoscalerCheckpoint,
)
from tailor.quantity import QuantityError, parse_quantity
from tests.tailor.api_objects import REAL_CHECKPOINT, REAL_VPA

CRD_DIR = Path(__file__).resolve().parents[2] / "deploy" / "crds"


def load(name: str) -> dict[str, Any]:
    documents = list(yaml.safe_load_all((CRD_DIR / name).read_text()))
    assert len(documents) == 1
    crd: dict[str, Any] = documents[0]
    return crd


VPA_CRD = load("verticalpodautoscalers.yaml")
CHECKPOINT_CRD = load("verticalpodautoscalercheckpoints.yaml")


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.parametrize(
    ("crd", "name", "kind", "plural"),
    [
        (VPA_CRD, VPA_CRD_NAME, VPA_KIND, VPA_PLURAL),
        (CHECKPOINT_CRD, CHECKPOINT_CRD_NAME, CHECKPOINT_KIND, CHECKPOINT_PLURAL),
    ],
)
def test_names_match_the_api_constants(
    crd: dict[str, Any], name: str, kind: str, plural: str
) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == name == f"{plural}.{GROUP}"
    # *.k8s.io groups are protected: the API server refuses CRDs without this.
    assert crd["metadata"]["annotations"]["api-approved.kubernetes.io"].startswith("https://")
    spec = crd["spec"]
    assert (spec["group"], spec["scope"]) == (GROUP, "Namespaced")
    assert (spec["names"]["kind"], spec["names"]["plural"]) == (kind, plural)
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == (VERSION, True, True)


def test_only_the_vpa_has_a_status_subresource() -> None:
    assert VPA_CRD["spec"]["versions"][0]["subresources"] == {"status": {}}
    assert "subresources" not in CHECKPOINT_CRD["spec"]["versions"][0]


def structural_problems(node: dict[str, Any], path: str = "") -> list[str]:
    """Departures from the API server's structural-schema rules that matter here."""
    problems = []
    if node.get("x-kubernetes-int-or-string"):
        if node.get("anyOf") != [{"type": "integer"}, {"type": "string"}] or "type" in node:
            problems.append(f"{path}: int-or-string must be anyOf integer/string without type")
    elif "type" not in node:
        problems.append(f"{path}: missing type")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: both properties and additionalProperties")
    for key, child in node.get("properties", {}).items():
        problems += structural_problems(child, f"{path}.{key}")
    if isinstance(node.get("additionalProperties"), dict):
        problems += structural_problems(node["additionalProperties"], f"{path}[*]")
    if "items" in node:
        problems += structural_problems(node["items"], f"{path}[]")
    return problems


@pytest.mark.parametrize("crd", [VPA_CRD, CHECKPOINT_CRD])
def test_schemas_are_structural(crd: dict[str, Any]) -> None:
    assert structural_problems(schema_of(crd)) == []


def pruned_paths(value: Any, node: dict[str, Any], path: str = "") -> list[str]:
    """Paths in `value` the API server would prune under schema `node`."""
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return []
    if isinstance(value, dict):
        pruned = []
        for key, child in value.items():
            if key in node.get("properties", {}):
                pruned += pruned_paths(child, node["properties"][key], f"{path}.{key}")
            elif isinstance(node.get("additionalProperties"), dict):
                pruned += pruned_paths(child, node["additionalProperties"], f"{path}.{key}")
            elif not (path == ".metadata" or path.startswith(".metadata.")):
                pruned.append(f"{path}.{key}")
        return pruned
    if isinstance(value, list):
        return [
            p
            for i, item in enumerate(value)
            for p in pruned_paths(item, node["items"], f"{path}[{i}]")
        ]
    return []


def full_vpa() -> dict[str, Any]:
    """REAL_VPA plus every other field our models know."""
    data = copy.deepcopy(REAL_VPA)
    data["spec"]["updatePolicy"]["evictAfterOOMSeconds"] = 600
    data["spec"]["startupBoost"] = {"cpu": {"type": "Factor", "factor": 2}}
    policies = data["spec"]["resourcePolicy"]["containerPolicies"]
    policies[0].update({"mode": "Auto", "oomBumpUpRatio": "1.2", "oomMinBumpUp": "100Mi"})
    condition = data["status"]["conditions"][0]
    condition.update({"reason": "Computed", "message": "ok", "observedGeneration": 3})
    data["status"]["observedGeneration"] = 3
    return data


def test_no_field_of_our_models_would_be_pruned() -> None:
    vpa = VerticalPodAutoscaler.from_api(full_vpa()).to_api()
    assert pruned_paths(vpa, schema_of(VPA_CRD)) == []
    checkpoint = VerticalPodAutoscalerCheckpoint.from_api(REAL_CHECKPOINT).to_api()
    assert pruned_paths(checkpoint, schema_of(CHECKPOINT_CRD)) == []


def test_pruning_check_would_notice_a_missing_field() -> None:
    data = full_vpa()
    data["spec"]["updatePolicy"]["surprise"] = 1
    assert pruned_paths(data, schema_of(VPA_CRD)) == [".spec.updatePolicy.surprise"]


def test_enums_match_the_python_enums() -> None:
    spec = schema_of(VPA_CRD)["properties"]["spec"]["properties"]
    policy = spec["resourcePolicy"]["properties"]["containerPolicies"]["items"]["properties"]
    update = spec["updatePolicy"]["properties"]
    requirement = update["evictionRequirements"]["items"]["properties"]["changeRequirement"]
    assert update["updateMode"]["enum"] == [m.value for m in UpdateMode]
    assert policy["mode"]["enum"] == [m.value for m in ContainerScalingMode]
    assert policy["controlledValues"]["enum"] == [v.value for v in ControlledValues]
    assert requirement["enum"] == [r.value for r in EvictionChangeRequirement]


def test_required_fields() -> None:
    schema = schema_of(VPA_CRD)
    assert schema["required"] == ["spec"]
    assert schema["properties"]["spec"]["required"] == ["targetRef"]
    assert schema["properties"]["spec"]["properties"]["targetRef"]["required"] == ["kind", "name"]


QUANTITY_TEXTS = [
    "100m",
    "0.5",
    "1e3",
    "128Mi",
    "1G",
    "12e6",
    "1.5Gi",
    "+1",
    ".5",
    "1E3",
    "5n",
    "1.",
    "-2Ki",
    "1E",
    "",
    "1e",
    "1K",
    "abc",
    "1e1.5",
    ".",
    "+",
    "1 ",
    "Mi",
]


@pytest.mark.parametrize("text", QUANTITY_TEXTS)
def test_quantity_pattern_agrees_with_the_parser(text: str) -> None:
    target = schema_of(VPA_CRD)["properties"]["status"]["properties"]["recommendation"]
    item = target["properties"]["containerRecommendations"]["items"]
    pattern = item["properties"]["target"]["additionalProperties"]["pattern"]
    try:
        parse_quantity(text)
        parses = True
    except QuantityError:
        parses = False
    assert (re.search(pattern, text) is not None) == parses
