"""Names of the VPA custom resources (the upstream API group, so both stacks share objects)."""

from __future__ import annotations

GROUP = "autoscaling.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

VPA_KIND = "VerticalPodAutoscaler"
VPA_LIST_KIND = "VerticalPodAutoscalerList"
VPA_PLURAL = "verticalpodautoscalers"
VPA_CRD_NAME = f"{VPA_PLURAL}.{GROUP}"

CHECKPOINT_KIND = "VerticalPodAutoscalerCheckpoint"
CHECKPOINT_LIST_KIND = "VerticalPodAutoscalerCheckpointList"
CHECKPOINT_PLURAL = "verticalpodautoscalercheckpoints"
CHECKPOINT_CRD_NAME = f"{CHECKPOINT_PLURAL}.{GROUP}"

DEFAULT_RECOMMENDER_NAME = "default"
"""The recommender that serves VPAs naming none in spec.recommenders."""

WILDCARD_CONTAINER = "*"
"""containerName of the default container policy."""
