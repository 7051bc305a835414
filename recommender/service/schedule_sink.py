"""The forecaster's schedule, from a pass's plan to the ConfigMap `tailor follow` mounts.

Only the rows of VPAs this recommender serves go out, and a workload with a row the
follower would refuse is dropped and named rather than voiding the whole ConfigMap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from pydantic import ValidationError

from recommender.service.status import OwnSettings, ServedVpa
from tailor.cluster_port import RecommenderCluster
from tailor.schedule_configmap import encode_schedule
from tailor.schedule_file import ScheduleRow, schedule_records


@dataclass
class ScheduleWrite:
    """What writing the schedule did: rows written (None: not written), workloads left
    out and why ("ns/workload: why"), and the write refused ("ConfigMap ns/name: why")."""

    rows: int | None = None
    dropped: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def served_schedule(
    schedule: pd.DataFrame, entries: list[ServedVpa], own: dict[tuple[str, str], OwnSettings]
) -> pd.DataFrame:
    """The plan of the containers whose VPAs we serve with usable settings: the fleet is
    fitted whole, but `tailor follow` must not resize what another recommender owns, nor
    follow a plain init container's history (its pods' sized containers only)."""
    served = {
        (entry.vpa.namespace, workload, container)
        for entry in entries
        if (found := own.get((entry.vpa.namespace, entry.vpa.name))) is None
        or found.problem is None
        for workload in entry.workloads
        for container in entry.containers
    }
    keys = pd.MultiIndex.from_frame(schedule[["namespace", "workload", "container"]])
    return schedule[keys.isin(list(served))].reset_index(drop=True)


def write_schedule(
    cluster: RecommenderCluster, where: tuple[str, str], schedule: pd.DataFrame
) -> ScheduleWrite:
    """Write the plan's valid rows; a workload with a row `tailor follow` would refuse
    (an amount out of range) is left out and named, so one VPA cannot void everyone's."""
    namespace, name = where
    report = ScheduleWrite()
    records = schedule_records(schedule)
    broken = set()
    for record in records:
        try:
            ScheduleRow.model_validate(record)
        except ValidationError as error:
            key = (record["namespace"], record["workload"])
            if key not in broken:
                broken.add(key)
                report.dropped.append(f"{key[0]}/{key[1]}: {error.errors()[0]['msg']}")
    records = [r for r in records if (r["namespace"], r["workload"]) not in broken]
    try:
        keys, _ = encode_schedule(records)
    except ValueError as error:
        report.refused.append(f"ConfigMap {namespace}/{name}: {error}")
        return report
    answer = cluster.write_config_map(namespace, name, keys)
    if answer.accepted:
        report.rows = len(records)
    else:
        report.refused.append(f"ConfigMap {namespace}/{name}: {answer.message}")
    return report
