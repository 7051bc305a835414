"""The checks upstream's admission controller makes before a VPA is stored (pure).

The CRD's schema cannot say that maxAllowed must not be under minAllowed, or that a
CPU bound is whole millicores: upstream's webhook refuses such a VerticalPodAutoscaler
at `kubectl apply`, with these messages, rather than let every component meet it on
each pass. The webhook runs before the API server checks the schema, so a field of
the wrong type is left to that check: only upstream's own rules refuse here. Feature
gates upstream puts in front of some fields (InPlaceOrRecreate, startupBoost, the
per-VPA OOM settings) are not needed: kube-tailor supports them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from tailor.api.vpa import ContainerScalingMode, UpdateMode
from tailor.quantity import Quantity, QuantityError

Json = Mapping[str, Any]

UPDATE_MODES = {mode.value for mode in UpdateMode}
SCALING_MODES = {mode.value for mode in ContainerScalingMode}
BOOST_TYPES = ("Factor", "Quantity")
DEFAULT_UPDATE_MODE = UpdateMode.RECREATE.value  # upstream's default since Auto's deprecation


def _object(value: object) -> Json:
    return value if isinstance(value, Mapping) else {}


def _quantity(value: object) -> Quantity | None:
    """The quantity, or None when it is no quantity (the schema check refuses it then)."""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        return Quantity.parse(value)
    except QuantityError:
        return None


def _resolution(resource: str, amount: Quantity) -> str | None:
    value: Fraction = amount.value
    if resource == "cpu" and (value * 1000).denominator != 1:
        return f"CPU [{amount}] must be a whole number of milli CPUs"
    if resource == "memory" and value.denominator != 1:
        return f"memory [{amount}] must be a whole number of bytes"
    return None


def _bounds_problem(policy: Json) -> str | None:
    minimum, maximum = _object(policy.get("minAllowed")), _object(policy.get("maxAllowed"))
    for word, bounds in (("minAllowed", minimum), ("maxAllowed", maximum)):
        for resource, text in bounds.items():
            amount = _quantity(text)
            said = _resolution(str(resource), amount) if amount is not None else None
            if said:
                return f"{word}: {said}"
    for resource, text in minimum.items():
        low, high = _quantity(text), _quantity(maximum.get(resource))
        if low is not None and high is not None and high < low:
            return f"max resource for {resource} is lower than min"
    return None


def _boost_problem(boost: object) -> str | None:
    cpu = _object(_object(boost).get("cpu"))
    if not cpu:
        return None
    kind = cpu.get("type")
    if kind not in BOOST_TYPES:
        return (
            "startupBoost.cpu.type field is required and must be either Factor or Quantity, "
            f"got {kind}"
        )
    if kind == "Factor":
        factor = cpu.get("factor")
        if factor is None:
            return "startupBoost.cpu.factor is required when type is Factor"
        if isinstance(factor, int) and not isinstance(factor, bool) and factor < 1:
            return "invalid startupBoost.cpu.factor: must be >= 1 for type Factor"
        return None
    if cpu.get("quantity") is None:
        return "startupBoost.cpu.quantity is required when type is Quantity"
    amount = _quantity(cpu.get("quantity"))
    said = _resolution("cpu", amount) if amount is not None else None
    return f"invalid startupBoost.cpu.quantity: {said}" if said else None


def _container_policy_problem(policy: Json) -> str | None:
    name = policy.get("containerName")
    if not name:
        return "containerPolicies.ContainerName is required"
    ratio = _quantity(policy.get("oomBumpUpRatio"))
    if ratio is not None and ratio.value < 1:
        return f"oomBumpUpRatio must be greater than or equal to 1.0, got {float(ratio.value)}"
    bump = _quantity(policy.get("oomMinBumpUp"))
    if bump is not None and bump.value < 0:
        return f"oomMinBumpUp must be greater than or equal to 0, got {int(bump.value)} bytes"
    mode = policy.get("mode")
    if isinstance(mode, str) and mode not in SCALING_MODES:
        return f"unexpected Mode value {mode}"
    said = _bounds_problem(policy)
    if said:
        return said
    if mode == "Off" and policy.get("controlledValues") == "RequestsAndLimits":
        return "controlledValues shouldn't be specified if container scaling mode is off"
    boost = _boost_problem(policy.get("startupBoost"))
    return f"invalid startupBoost in container {name}: {boost}" if boost else None


def vpa_problem(vpa: Json, is_create: bool) -> str | None:
    """Why upstream's admission controller would refuse this VPA; None when it would not."""
    spec = _object(vpa.get("spec"))
    policy = spec.get("updatePolicy")
    if isinstance(policy, Mapping):
        mode = policy.get("updateMode")
        if mode is None:
            return "updateMode is required if UpdatePolicy is used"
        if isinstance(mode, str) and mode not in UPDATE_MODES:
            return f"unexpected UpdateMode value {mode}"
        replicas = policy.get("minReplicas")
        if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas <= 0:
            return f"minReplicas has to be positive, got {replicas}"
    policies = _object(spec.get("resourcePolicy")).get("containerPolicies")
    for container_policy in policies if isinstance(policies, list) else []:
        said = _container_policy_problem(_object(container_policy))
        if said:
            return said
    boost = _boost_problem(spec.get("startupBoost"))
    if boost:
        return f"invalid startupBoost: {boost}"
    if is_create and spec.get("targetRef") is None:
        return (
            "targetRef is required. If you're using v1beta1 version of the API, "
            "please migrate to v1"
        )
    recommenders = spec.get("recommenders")
    if isinstance(recommenders, list) and len(recommenders) > 1:
        return "the current version of VPA object shouldn't specify more than one recommenders"
    return None


def update_policy_default(vpa: Json) -> Json | None:
    """Upstream's one default: a VPA without updatePolicy gets updateMode Recreate, which
    is what every component does with it (the webhook writes it, so the stored object
    says so); None when the VPA has an updatePolicy."""
    spec = vpa.get("spec")
    if not isinstance(spec, Mapping) or spec.get("updatePolicy") is not None:
        return None
    return {"updateMode": DEFAULT_UPDATE_MODE}
