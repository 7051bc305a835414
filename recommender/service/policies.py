"""What the VPAs we serve ask of the model itself, beyond where to write.

Upstream's AEP-8026 lets a VPA's containerPolicies set `oomBumpUpRatio` and
`oomMinBumpUp` for its containers, over the recommender's flags: the container's
own policy, else the "*" one, and a field left unset keeps the flag's value.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from recommender.data.arrays import AGGREGATE_COLUMNS
from recommender.oom_bumps import OOM_BUMP_COLUMNS
from recommender.service.status import ServedVpa


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
