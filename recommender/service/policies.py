"""What the VPAs we serve ask of the model itself, beyond where to write.

Upstream's AEP-8026 lets a VPA's containerPolicies set `oomBumpUpRatio` and
`oomMinBumpUp` for its containers, over the recommender's flags: the container's
own policy, else the "*" one, and a field left unset keeps the flag's value.
Beyond upstream, an annotation sets any of the model's settings for one VPA, and
`kube-tailor.io/changes-per-day` the forecaster's change budget for its workloads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeVar, cast

import numpy as np
import pandas as pd

from recommender.data.arrays import AGGREGATE_COLUMNS
from recommender.forecast.settings import ForecastSettings
from recommender.oom_bumps import OOM_BUMP_COLUMNS
from recommender.overrides import SettingsError, settings_with
from recommender.service.status import OwnSettings, ServedVpa
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.change_budget import CHANGES_PER_DAY, BudgetError, changes_per_day

Settings = TypeVar("Settings")


def oom_bumps(entries: Iterable[ServedVpa]) -> pd.DataFrame | None:
    """One row per (namespace, workload, container) whose VPA sets an OOM bump; None
    when no VPA does (the model's own settings everywhere)."""
    rows: list[tuple[str, str, str, float, float]] = []
    for entry in entries:
        vpa = entry.vpa
        for container in sorted(entry.containers):
            policy = vpa.container_policy(container)
            if policy is None or (policy.oom_bump_up_ratio, policy.oom_min_bump_up) == (None, None):
                continue
            ratio = np.nan if policy.oom_bump_up_ratio is None else float(policy.oom_bump_up_ratio)
            least = np.nan if policy.oom_min_bump_up is None else float(policy.oom_min_bump_up)
            rows.extend(
                (vpa.namespace, workload, container, ratio, least)
                for workload in sorted(entry.workloads)
            )
    if not rows:
        return None
    frame = pd.DataFrame(rows, columns=[*AGGREGATE_COLUMNS, *OOM_BUMP_COLUMNS])
    return frame.drop_duplicates(list(AGGREGATE_COLUMNS), keep="first")


# A VPA's own model settings, over the service's flags: the SLO knobs upstream lacks
# (its issues 4293, 9970), e.g. `kube-tailor.io/forecast-set: target_cpu_shortfall=0.005`.
VPA_SET_ANNOTATION = "kube-tailor.io/vpa-set"
FORECAST_SET_ANNOTATION = "kube-tailor.io/forecast-set"


def annotated_pairs(vpa: VerticalPodAutoscaler, annotation: str) -> list[str] | None:
    """NAME=VALUE pairs of the annotation, split on ";" and newlines (a value may hold
    commas: tuples); None when the VPA has no such annotation."""
    text = (vpa.metadata.annotations or {}).get(annotation)
    if text is None:
        return None
    return [part.strip() for part in re.split(r"[;\n]", text) if part.strip()]


def settings_groups(
    entries: Iterable[ServedVpa], base: Settings, annotation: str, what: str
) -> tuple[dict[Settings, list[ServedVpa]], dict[tuple[str, str], OwnSettings]]:
    """The served VPAs grouped by the settings their model runs with (`base` unless the
    annotation sets some), and for each annotated VPA whether its settings were taken;
    a VPA whose annotation cannot be read joins no group."""
    groups: dict[Settings, list[ServedVpa]] = {}
    own: dict[tuple[str, str], OwnSettings] = {}
    for entry in entries:
        pairs = annotated_pairs(entry.vpa, annotation)
        key = (entry.vpa.namespace, entry.vpa.name)
        settings = base
        if pairs is not None:
            try:
                settings = settings_with(pairs, base, what)
            except SettingsError as error:
                own[key] = OwnSettings(annotation, f"{annotation}: {error}")
                continue
            own[key] = OwnSettings(annotation)
        budget = (entry.vpa.metadata.annotations or {}).get(CHANGES_PER_DAY)
        if budget is not None and isinstance(settings, ForecastSettings):
            try:
                settings = cast(Settings, settings.with_budget(changes_per_day(budget)))
            except BudgetError as error:
                own[key] = OwnSettings(CHANGES_PER_DAY, str(error))
                continue
            own.setdefault(key, OwnSettings(CHANGES_PER_DAY))
        groups.setdefault(settings, []).append(entry)
    return groups, own
