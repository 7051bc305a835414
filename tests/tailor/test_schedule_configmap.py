"""The schedule in a ConfigMap: compact JSON, gzipped past the size a ConfigMap holds."""

from __future__ import annotations

import base64
import gzip
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tailor.kube import Cluster
from tailor.schedule_configmap import (
    PLAIN_LIMIT,
    SCHEDULE_GZ_KEY,
    decode_schedule,
    encode_schedule,
)
from tailor.schedule_file import SCHEDULE_KEY, ScheduleError
from tests.cluster.controlplane import ControlPlane

START = datetime(2026, 11, 24, tzinfo=UTC)


def records(containers: int, periods: int = 24) -> list[dict[str, Any]]:
    """A fleet's plan as `schedule_records` writes it, hourly."""
    return [
        {
            "namespace": "shop",
            "workload": f"web-{index}",
            "container": "app",
            "start": (START + timedelta(hours=h)).isoformat().replace("+00:00", "Z"),
            "end": (START + timedelta(hours=h + 1)).isoformat().replace("+00:00", "Z"),
            "cpu": 0.1 + 0.001 * ((index * 7 + h) % 97),
            "memory": float(2**28 + index * 4096 + h),
            "memoryLimit": None,
        }
        for index in range(containers)
        for h in range(periods)
    ]


def test_a_small_plan_is_plain_compact_json_and_reads_back() -> None:
    keys, size = encode_schedule(records(3))
    assert keys[SCHEDULE_GZ_KEY] is None  # a gzipped plan from an earlier pass is removed
    text = keys[SCHEDULE_KEY]
    assert text is not None and "\n" not in text and ", " not in text
    assert size == len(text.encode())
    rows = decode_schedule({SCHEDULE_KEY: text}, "ConfigMap x/y")
    assert [(r.workload, r.start.hour) for r in rows[:2]] == [("web-0", 0), ("web-0", 1)]


def test_a_fleet_past_the_plain_limit_is_gzipped_into_binary_data() -> None:
    fleet = records(1_000)  # about 4 MB of JSON: four times what a ConfigMap holds
    keys, size = encode_schedule(fleet)
    assert keys[SCHEDULE_KEY] is None
    packed = keys[SCHEDULE_GZ_KEY]
    assert packed is not None and size == len(packed) < PLAIN_LIMIT
    rows = decode_schedule({SCHEDULE_GZ_KEY: packed}, "ConfigMap x/y")
    assert len(rows) == len(fleet)
    assert rows[-1].memory == fleet[-1]["memory"]


def test_a_plan_too_large_even_gzipped_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="serve fewer namespaces per recommender"):
        encode_schedule(records(40_000, periods=4))


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({}, "has no key schedule.json or schedule.json.gz"),
        ({SCHEDULE_GZ_KEY: "not base64!"}, "is not gzipped JSON"),
        ({SCHEDULE_GZ_KEY: base64.b64encode(b"plain").decode()}, "is not gzipped JSON"),
        ({SCHEDULE_GZ_KEY: base64.b64encode(gzip.compress(b"{")).decode()}, "not JSON"),
        ({SCHEDULE_KEY: "[1]"}, "row 0"),
    ],
)
def test_a_broken_config_map_is_a_schedule_error(keys: dict[str, str], message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        decode_schedule(keys, "ConfigMap x/y")


def test_the_api_server_stores_either_form_and_the_other_key_goes(
    kube_cluster: ControlPlane, kube_namespace: str
) -> None:
    with kube_cluster.api_client() as client:
        cluster = Cluster(client)
        big, _ = encode_schedule(records(1_000))
        assert cluster.write_config_map(kube_namespace, "plan", big).accepted
        stored = cluster.config_map_data(kube_namespace, "plan")
        assert stored is not None and set(stored) == {SCHEDULE_GZ_KEY}
        assert len(decode_schedule(stored, "plan")) == 24_000
        small, _ = encode_schedule(records(2))
        assert cluster.write_config_map(kube_namespace, "plan", small).accepted
        stored = cluster.config_map_data(kube_namespace, "plan")
        assert stored is not None and set(stored) == {SCHEDULE_KEY}
        assert len(decode_schedule(stored, "plan")) == 48
