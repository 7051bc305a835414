"""The VerticalPodAutoscaler object (autoscaling.k8s.io/v1), field for field.

Only what our components read or write is modelled; newer upstream fields we do
not act on ride along as preserved extras.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Self

from pydantic import Field, model_validator

from tailor.api.crd import API_VERSION, VPA_KIND, VPA_LIST_KIND, WILDCARD_CONTAINER
from tailor.api.meta import (
    RESOURCE_CPU,
    RESOURCE_MEMORY,
    APIModel,
    ObjectMeta,
    ResourceList,
    Timestamp,
    granule,
    require_ordered,
)
from tailor.durations import DurationError, parse_duration
from tailor.quantity import Quantity


class UpdateMode(StrEnum):
    """spec.updatePolicy.updateMode. `Auto` is deprecated upstream and means Recreate."""

    OFF = "Off"
    INITIAL = "Initial"
    RECREATE = "Recreate"
    IN_PLACE_OR_RECREATE = "InPlaceOrRecreate"
    IN_PLACE = "InPlace"
    AUTO = "Auto"


class ContainerScalingMode(StrEnum):
    AUTO = "Auto"
    OFF = "Off"


class ControlledValues(StrEnum):
    REQUESTS_AND_LIMITS = "RequestsAndLimits"
    REQUESTS_ONLY = "RequestsOnly"


class EvictionChangeRequirement(StrEnum):
    TARGET_HIGHER_THAN_REQUESTS = "TargetHigherThanRequests"
    TARGET_LOWER_THAN_REQUESTS = "TargetLowerThanRequests"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class ConditionType(StrEnum):
    """Condition types the upstream components set (the field itself accepts any string)."""

    RECOMMENDATION_PROVIDED = "RecommendationProvided"
    LOW_CONFIDENCE = "LowConfidence"
    NO_PODS_MATCHED = "NoPodsMatched"
    FETCHING_HISTORY = "FetchingHistory"
    CONFIG_DEPRECATED = "ConfigDeprecated"
    CONFIG_UNSUPPORTED = "ConfigUnsupported"


DEFAULT_CONTROLLED_RESOURCES = (RESOURCE_CPU, RESOURCE_MEMORY)


class CrossVersionObjectReference(APIModel):
    """spec.targetRef: the top-most controller of the pods (Deployment, StatefulSet...)."""

    api_version: str | None = None
    kind: str
    name: str


class EvictionRequirement(APIModel):
    resources: list[str]
    change_requirement: EvictionChangeRequirement


class PodUpdatePolicy(APIModel):
    update_mode: UpdateMode | None = None
    min_replicas: int | None = Field(default=None, gt=0)
    eviction_requirements: list[EvictionRequirement] | None = None
    evict_after_oom_seconds: int | None = Field(default=None, ge=1, alias="evictAfterOOMSeconds")


class CPUBoostType(StrEnum):
    FACTOR = "Factor"
    QUANTITY = "Quantity"


class CPUStartupBoost(APIModel):
    """startupBoost.cpu (upstream's AEP-7862): more CPU from creation until the pod has been
    Ready for `duration`; then the updater resizes it back in place."""

    type: CPUBoostType
    factor: int | None = None
    quantity: Quantity | None = None
    duration: str | None = None  # a Go duration ("10s", "1m0s"); none: unboost once Ready

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        """The union upstream declares: a factor >= 1 or a positive quantity, not both."""
        if self.type is CPUBoostType.FACTOR:
            if self.factor is None or self.factor < 1 or self.quantity is not None:
                raise ValueError("startupBoost.cpu type Factor needs a factor >= 1 and no quantity")
        elif self.quantity is None or self.quantity.nanos <= 0 or self.factor is not None:
            raise ValueError("startupBoost.cpu type Quantity needs a quantity > 0 and no factor")
        self.hold()  # a duration that does not parse is refused here, not at unboost time
        return self

    def hold(self) -> timedelta:
        """How long the boost stays after the pod is Ready."""
        if self.duration is None:
            return timedelta(0)
        try:
            return parse_duration(self.duration)
        except DurationError as error:
            raise ValueError(f"startupBoost.cpu duration: {error}") from None

    def boosted(self, cpu: Quantity) -> Quantity:
        """`cpu` during the boost, in whole millicores: times the factor, or the quantity
        added."""
        if self.type is CPUBoostType.FACTOR:
            return Quantity.from_milli(cpu.milli_value() * (self.factor or 1))
        added = self.quantity.milli_value() if self.quantity is not None else 0
        return Quantity.from_milli(cpu.milli_value() + added)


class StartupBoost(APIModel):
    cpu: CPUStartupBoost | None = None


class ContainerResourcePolicy(APIModel):
    """One entry of spec.resourcePolicy.containerPolicies ("*" is the default entry)."""

    container_name: str | None = None
    mode: ContainerScalingMode | None = None
    min_allowed: ResourceList | None = None
    max_allowed: ResourceList | None = None
    controlled_resources: list[str] | None = None
    controlled_values: ControlledValues | None = None
    oom_bump_up_ratio: Quantity | None = None
    oom_min_bump_up: Quantity | None = None
    startup_boost: StartupBoost | None = None  # overrides the VPA's for this container

    @property
    def is_off(self) -> bool:
        return self.mode is ContainerScalingMode.OFF

    def effective_controlled_resources(self) -> tuple[str, ...]:
        """The resources recommended for this container (default: cpu and memory)."""
        if self.controlled_resources is None:
            return DEFAULT_CONTROLLED_RESOURCES
        return tuple(self.controlled_resources)

    def effective_controlled_values(self) -> ControlledValues:
        return self.controlled_values or ControlledValues.REQUESTS_AND_LIMITS

    @model_validator(mode="after")
    def _as_upstream_admits(self) -> Self:
        """The upstream admission controller's rules; unchecked, min above max let max win
        silently, a sub-millicore bound gave sub-millicore recommendations, and an unknown
        controlled resource was never recommended for."""
        require_ordered(self.min_allowed, self.max_allowed, ("minAllowed", "maxAllowed"))
        for field, bounds in (("minAllowed", self.min_allowed), ("maxAllowed", self.max_allowed)):
            for resource, amount in (bounds or {}).items():
                if resource in DEFAULT_CONTROLLED_RESOURCES and amount.nanos % granule(resource):
                    step = "milli CPUs" if resource == RESOURCE_CPU else "bytes"
                    raise ValueError(f"{field} {resource} {amount} is not a whole number of {step}")
        unsupported = set(self.controlled_resources or ()) - set(DEFAULT_CONTROLLED_RESOURCES)
        if unsupported:
            raise ValueError(f"controlledResources {sorted(unsupported)}: only cpu and memory")
        if self.is_off and self.controlled_values is ControlledValues.REQUESTS_AND_LIMITS:
            raise ValueError("controlledValues may not be RequestsAndLimits when mode is Off")
        if self.oom_bump_up_ratio is not None and self.oom_bump_up_ratio.value < 1:
            raise ValueError(f"oomBumpUpRatio {self.oom_bump_up_ratio} is less than 1")
        if self.oom_min_bump_up is not None and self.oom_min_bump_up.nanos < 0:
            raise ValueError(f"oomMinBumpUp {self.oom_min_bump_up} is negative")
        return self


class PodResourcePolicy(APIModel):
    container_policies: list[ContainerResourcePolicy] | None = None

    @model_validator(mode="after")
    def _every_policy_names_its_container(self) -> Self:
        """A policy without containerName (upstream requires one) would apply to nothing."""
        for index, policy in enumerate(self.container_policies or []):
            if not policy.container_name:
                raise ValueError(f"containerPolicies[{index}].containerName is required")
        return self

    def policy_for(self, container_name: str) -> ContainerResourcePolicy | None:
        """The container's own policy, else the "*" policy, else None."""
        wildcard = None
        for policy in self.container_policies or []:
            if policy.container_name == container_name:
                return policy
            if policy.container_name == WILDCARD_CONTAINER and wildcard is None:
                wildcard = policy
        return wildcard


class RecommenderSelector(APIModel):
    name: str


class VerticalPodAutoscalerSpec(APIModel):
    target_ref: CrossVersionObjectReference
    update_policy: PodUpdatePolicy | None = None
    resource_policy: PodResourcePolicy | None = None
    recommenders: list[RecommenderSelector] | None = Field(default=None, max_length=1)
    startup_boost: StartupBoost | None = None


class RecommendedContainerResources(APIModel):
    """One container's recommendation; target is required by the API."""

    container_name: str | None = None
    target: ResourceList = Field(default_factory=ResourceList)
    lower_bound: ResourceList | None = None
    upper_bound: ResourceList | None = None
    uncapped_target: ResourceList | None = None


class RecommendedPodResources(APIModel):
    container_recommendations: list[RecommendedContainerResources] | None = None

    def for_container(self, container_name: str) -> RecommendedContainerResources | None:
        for recommendation in self.container_recommendations or []:
            if recommendation.container_name == container_name:
                return recommendation
        return None


class VerticalPodAutoscalerCondition(APIModel):
    type: str
    status: ConditionStatus
    last_transition_time: Timestamp | None = None
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None


class VerticalPodAutoscalerStatus(APIModel):
    recommendation: RecommendedPodResources | None = None
    conditions: list[VerticalPodAutoscalerCondition] | None = None
    observed_generation: int | None = None

    def condition(self, condition_type: str) -> VerticalPodAutoscalerCondition | None:
        for condition in self.conditions or []:
            if condition.type == condition_type:
                return condition
        return None


class VerticalPodAutoscaler(APIModel):
    api_version: str = API_VERSION
    kind: str = VPA_KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: VerticalPodAutoscalerSpec
    status: VerticalPodAutoscalerStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    def effective_update_mode(self) -> UpdateMode:
        """The mode the components act on: unset and deprecated `Auto` both mean Recreate."""
        policy = self.spec.update_policy
        mode = policy.update_mode if policy is not None else None
        if mode is None or mode is UpdateMode.AUTO:
            return UpdateMode.RECREATE
        return mode

    def container_policy(self, container_name: str) -> ContainerResourcePolicy | None:
        """The policy that applies to a container: its own entry wins over "*"."""
        if self.spec.resource_policy is None:
            return None
        return self.spec.resource_policy.policy_for(container_name)

    def cpu_startup_boost(self, container_name: str) -> CPUStartupBoost | None:
        """The CPU startup boost of a container: its policy's, else the VPA's (AEP-7862)."""
        policy = self.container_policy(container_name)
        own = policy.startup_boost if policy is not None else None
        if own is not None and own.cpu is not None:
            return own.cpu
        return self.spec.startup_boost.cpu if self.spec.startup_boost is not None else None

    def recommender_names(self) -> list[str]:
        return [selector.name for selector in self.spec.recommenders or []]

    def recommendation(self) -> RecommendedPodResources | None:
        return self.status.recommendation if self.status is not None else None


class VerticalPodAutoscalerList(APIModel):
    api_version: str = API_VERSION
    kind: str = VPA_LIST_KIND
    metadata: dict[str, object] | None = None
    items: list[VerticalPodAutoscaler] = Field(default_factory=list)
