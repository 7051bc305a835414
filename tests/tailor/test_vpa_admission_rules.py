"""Upstream's admission checks on a VPA being written, word for word (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from tailor.api.vpa_validation import update_policy_default, vpa_problem

TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def vpa(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "web"}, "spec": {"targetRef": TARGET, **spec}}


def policy(**fields: Any) -> dict[str, Any]:
    return {"resourcePolicy": {"containerPolicies": [{"containerName": "app", **fields}]}}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"updatePolicy": {}}, "updateMode is required if UpdatePolicy is used"),
        ({"updatePolicy": {"updateMode": "Sometimes"}}, "unexpected UpdateMode value Sometimes"),
        (
            {"updatePolicy": {"updateMode": "Auto", "minReplicas": 0}},
            "minReplicas has to be positive, got 0",
        ),
        (
            {"resourcePolicy": {"containerPolicies": [{"mode": "Auto"}]}},
            "containerPolicies.ContainerName is required",
        ),
        (policy(mode="Sometimes"), "unexpected Mode value Sometimes"),
        (
            policy(minAllowed={"cpu": "500m"}, maxAllowed={"cpu": "250m"}),
            "max resource for cpu is lower than min",
        ),
        (
            policy(minAllowed={"memory": "1Gi"}, maxAllowed={"memory": "1000Mi"}),
            "max resource for memory is lower than min",
        ),
        (
            policy(minAllowed={"cpu": "187500u"}),
            "minAllowed: CPU [187500u] must be a whole number of milli CPUs",
        ),
        (
            policy(maxAllowed={"memory": "1500m"}),
            "maxAllowed: memory [1500m] must be a whole number of bytes",
        ),
        (
            policy(mode="Off", controlledValues="RequestsAndLimits"),
            "controlledValues shouldn't be specified if container scaling mode is off",
        ),
        (
            policy(oomBumpUpRatio="0.5"),
            "oomBumpUpRatio must be greater than or equal to 1.0, got 0.5",
        ),
        (
            policy(startupBoost={"cpu": {"type": "Factor", "factor": 0}}),
            "invalid startupBoost in container app: invalid startupBoost.cpu.factor: must be >= 1 "
            "for type Factor",
        ),
        (
            {"startupBoost": {"cpu": {"type": "Quantity"}}},
            "invalid startupBoost: startupBoost.cpu.quantity is required when type is Quantity",
        ),
        (
            {"startupBoost": {"cpu": {"type": "Double"}}},
            "invalid startupBoost: startupBoost.cpu.type field is required and must be either "
            "Factor or Quantity, got Double",
        ),
        (
            {"recommenders": [{"name": "a"}, {"name": "b"}]},
            "the current version of VPA object shouldn't specify more than one recommenders",
        ),
    ],
)
def test_upstreams_rules_refuse_with_upstreams_words(spec: dict[str, Any], message: str) -> None:
    assert vpa_problem(vpa(**spec), is_create=True) == message


def test_a_vpa_upstream_accepts_is_accepted() -> None:
    accepted = vpa(
        updatePolicy={"updateMode": "InPlaceOrRecreate", "minReplicas": 1},
        recommenders=[{"name": "kube-tailor"}],
        startupBoost={"cpu": {"type": "Factor", "factor": 2}},
        **policy(
            minAllowed={"cpu": "100m", "memory": "64Mi"},
            maxAllowed={"cpu": "1", "memory": "64Mi"},  # equal bounds are fine
            controlledValues="RequestsOnly",
            oomBumpUpRatio="1.5",
            oomMinBumpUp="100Mi",
        ),
    )
    assert vpa_problem(accepted, is_create=True) is None


def test_a_missing_target_is_refused_at_creation_only() -> None:
    untargeted = {"metadata": {"name": "web"}, "spec": {}}
    assert vpa_problem(untargeted, is_create=True) == (
        "targetRef is required. If you're using v1beta1 version of the API, please migrate to v1"
    )
    assert vpa_problem(untargeted, is_create=False) is None


def test_fields_of_the_wrong_type_are_left_to_the_schema_check() -> None:
    """The mutating webhook runs before the API server checks the CRD's schema."""
    odd = vpa(updatePolicy={"updateMode": 3, "minReplicas": "two"},
              **policy(minAllowed={"cpu": ["1"]}, maxAllowed="lots"))  # fmt: skip
    assert vpa_problem(odd, is_create=True) is None
    assert vpa_problem({"spec": "nothing"}, is_create=False) is None


def test_only_a_missing_update_policy_is_defaulted_to_recreate() -> None:
    # the JSON Patch that writes it: tests/admission/test_admit.py
    assert update_policy_default(vpa()) == {"updateMode": "Recreate"}
    assert update_policy_default(vpa(updatePolicy=None)) == {"updateMode": "Recreate"}
    assert update_policy_default(vpa(updatePolicy={"updateMode": "Off"})) is None
