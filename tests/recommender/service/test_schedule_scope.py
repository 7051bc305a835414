"""Which plan the recommender publishes: its own VPAs' workloads, rows `tailor follow` reads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from recommender.service.schedule_sink import served_schedule, write_schedule
from recommender.service.status import OwnSettings, served_vpas
from tailor.cluster_port import Answer
from tailor.schedule_configmap import decode_schedule
from tests.recommender.service.test_status import DEPLOYMENT_RS, pod, vpa

START = pd.Timestamp("2026-11-24T00:00:00Z")


def plan(*workloads: str, memory: float = 2.0**28) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "namespace": "shop",
                "workload": w,
                "container": "app",
                "start": START,
                "end": START + pd.Timedelta(hours=1),
                "cpu_request": 0.25,
                "memory_request": memory,
                "memory_limit": np.nan,
            }
            for w in workloads
        ]
    )


class Written:
    """Stands in for the ConfigMap write; the real one is tested on the API server."""

    def __init__(self) -> None:
        self.keys: dict[str, Any] = {}

    def write_config_map(self, namespace: str, name: str, data: dict[str, Any]) -> Answer:
        self.keys = {k: v for k, v in data.items() if v is not None}
        return Answer(True, 200)


def test_only_the_workloads_of_vpas_we_serve_with_usable_settings_are_published() -> None:
    ours = vpa("web", recommenders=[{"name": "kube-tailor"}])
    theirs = vpa("api", target="api", recommenders=[{"name": "upstream"}])
    pods = [pod()]
    entries = served_vpas([ours, theirs], pods, DEPLOYMENT_RS, "kube-tailor", False)
    fleet = plan("web", "api", "no-vpa")
    assert list(served_schedule(fleet, entries, {})["workload"]) == ["web"]
    setup = plan("web").assign(container="setup")  # a plain init container's history
    assert served_schedule(pd.concat([fleet, setup]), entries, {})["container"].tolist() == ["app"]
    broken = {("shop", "web"): OwnSettings("kube-tailor.io/forecast-set", "bad setting")}
    assert served_schedule(fleet, entries, broken).empty


def test_a_workload_with_a_row_follow_would_refuse_is_left_out_and_named() -> None:
    fleet = pd.concat([plan("web"), plan("huge", memory=1e30)], ignore_index=True)
    written = Written()
    report = write_schedule(written, ("kube-tailor", "schedule"), fleet)  # type: ignore[arg-type]
    rows = decode_schedule(written.keys, "ConfigMap kube-tailor/schedule")
    assert [r.workload for r in rows] == ["web"]
    assert report.rows == 1
    assert len(report.dropped) == 1
    assert report.dropped[0].startswith("shop/huge: ")
