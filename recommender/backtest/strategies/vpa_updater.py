"""The upstream VPA updater's rules for when a pod gets new requests.

A pod (here: a container) is updated when
- a request is missing or outside [lowerBound, upperBound] of its recommendation;
- it was OOM-killed shortly after starting (upstream: running under 10 min; in a
  replay every kill counts, since the replayed usage keeps hitting the limit);
- it is older than 12 h and, summed over CPU and memory,
  |request - target| / request >= 10 %.
An update applies the target (the admission controller sets requests to it).

Modelled as mode Recreate: every update restarts the pod, so its age counts from
its last update (or its first sample). Left out: the minReplicas guard (single
replicas would never be evicted upstream), eviction rate limits and disruption
budgets, which depend on the cluster, not on the recommender.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recommender.replay import Requests
from recommender.vpa.estimators import VpaRecommendation
from tailor.durations import HOUR


@dataclass(frozen=True)
class VpaUpdaterSettings:
    min_pod_age_seconds: int = 12 * HOUR
    min_relative_difference: float = 0.10
    update_after_oom: bool = True


def _outside(request: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    return np.isnan(request) | (request < lower) | (request > upper)


def _relative(request: np.ndarray, target: np.ndarray) -> np.ndarray:
    out = np.zeros_like(request)
    np.divide(np.abs(request - target), request, out=out, where=request > 0)
    return np.where(np.isnan(out), 0.0, out)


def update_candidates(
    current: Requests,
    bounds: VpaRecommendation,
    pod_age_seconds: np.ndarray,
    oom_killed: np.ndarray,
    settings: VpaUpdaterSettings,
) -> np.ndarray:
    """(n,) bool: containers the updater would update now."""
    out_of_range = _outside(current.cpu, bounds.cpu_lower, bounds.cpu_upper) | _outside(
        current.memory, bounds.memory_lower, bounds.memory_upper
    )
    difference = _relative(current.cpu, bounds.cpu_target) + _relative(
        current.memory, bounds.memory_target
    )
    old_and_off = (pod_age_seconds >= settings.min_pod_age_seconds) & (
        difference >= settings.min_relative_difference
    )
    after_oom = oom_killed & settings.update_after_oom
    return out_of_range | old_and_off | after_oom
