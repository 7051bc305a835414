"""Reading `tailor schedule --format json` strictly, and picking the period in force."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tailor.cli.main import app
from tailor.schedule_file import ScheduleError, parse_schedule, read_schedule, schedule_records
from updater.due_targets import Target, due_targets

T0 = datetime(2024, 5, 14, tzinfo=UTC)


def row(**changes: Any) -> dict[str, Any]:
    """One row with every key `tailor schedule` writes; `changes` replaces or drops (None)."""
    found: dict[str, Any] = {
        "namespace": "shop",
        "workload": "web",
        "container": "app",
        "start": "2024-05-14T00:00:00Z",
        "end": "2024-05-14T01:00:00Z",
        "cpu": 0.25,
        "memory": 268435456.0,
        "memoryLimit": 536870912.0,
    }
    found.update(changes)
    return found


def text(*rows: dict[str, Any]) -> str:
    return json.dumps(list(rows), indent=2)


@pytest.fixture(scope="module")
def demo_schedule() -> str:
    result = CliRunner().invoke(app, ["schedule", "--demo", "--format", "json"])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_demo_schedule_as_tailor_writes_it_is_read_whole(demo_schedule: str) -> None:
    written = json.loads(demo_schedule)
    rows = parse_schedule(demo_schedule, "demo.json")
    assert len(rows) == len(written) > 0
    for parsed, raw in zip(rows, written, strict=True):
        assert parsed.namespace == raw["namespace"]
        assert parsed.container == raw["container"]
        assert parsed.start.isoformat().replace("+00:00", "Z") == raw["start"]
        assert parsed.cpu == raw["cpu"]
        assert parsed.memory == raw["memory"]
        assert parsed.memory_limit == raw["memoryLimit"]
    first = min(r.start for r in rows)
    due = due_targets(rows, first)
    containers = {(r["namespace"], r["workload"], r["container"]) for r in written}
    assert set(due) == containers  # every container has a period at the schedule's start
    jvm = next(r for r in written if r["container"] == "jvm" and r["start"] == written[0]["start"])
    assert due[("demo", "inventory", "jvm")] == Target(
        jvm["cpu"], jvm["memory"], jvm["memoryLimit"]
    )


def test_rows_from_the_writer_with_no_memory_read_as_null() -> None:
    start = pd.Timestamp("2024-05-14", tz="UTC")
    frame = pd.DataFrame(
        {
            "namespace": ["shop", "shop"],
            "workload": ["web", "web"],
            "container": ["app", "app"],
            "start": [start, start + pd.Timedelta(hours=1)],
            "end": [start + pd.Timedelta(hours=1), start + pd.Timedelta(hours=2)],
            "cpu_request": [0.5, 0.75],
            "memory_request": [np.nan, 3e8],
            "memory_limit": [np.nan, 4e8],
        }
    )
    written = json.dumps(schedule_records(frame), indent=2, allow_nan=False)
    rows = parse_schedule(written, "s.json")
    assert (rows[0].memory, rows[0].memory_limit) == (None, None)
    assert due_targets(rows, T0)[("shop", "web", "app")] == Target(0.5, None, None)
    assert due_targets(rows, T0 + timedelta(hours=1))[("shop", "web", "app")] == Target(
        0.75, 3e8, 4e8
    )


def test_read_schedule_names_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ScheduleError, match=r"cannot read schedule .*missing\.json"):
        read_schedule(tmp_path / "missing.json")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe[")
    with pytest.raises(ScheduleError, match=r"binary\.json"):
        read_schedule(binary)
    good = tmp_path / "good.json"
    good.write_text(text(row()), encoding="utf-8")
    assert [r.container for r in read_schedule(good)] == ["app"]
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # read_text would wait for a writer for ever
    with pytest.raises(ScheduleError, match=r"fifo\.json: a named pipe \(FIFO\)"):
        read_schedule(fifo)
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    with pytest.raises(ScheduleError, match=r"loop\.json: a symbolic link loop"):
        read_schedule(loop)


def test_not_json_names_the_source_and_line() -> None:
    with pytest.raises(ScheduleError, match=r"^plan\.json: not JSON .* at line 2"):
        parse_schedule('[\n{"namespace": ', "plan.json")


@pytest.mark.parametrize("document", ["[" + "9" * 5000 + "]", "[" * 100_000 + "]" * 100_000])
def test_json_python_cannot_hold_is_not_json(document: str) -> None:
    with pytest.raises(ScheduleError, match=r"^plan\.json: not JSON"):
        parse_schedule(document, "plan.json")


@pytest.mark.parametrize("document", ['{"rows": []}', '"rows"', "3", "null"])
def test_a_document_that_is_not_a_list_is_refused(document: str) -> None:
    with pytest.raises(ScheduleError, match=r"^plan\.json: expected a JSON list"):
        parse_schedule(document, "plan.json")


def test_an_empty_list_is_an_empty_schedule() -> None:
    assert parse_schedule("[]", "plan.json") == []


def _drop(name: str) -> dict[str, Any]:
    found = row()
    del found[name]
    return found


@pytest.mark.parametrize(
    ("bad", "field", "words"),
    [
        ("not a row", "row", "dictionary"),
        (["shop"], "row", "dictionary"),
        (_drop("namespace"), "namespace", "Field required"),
        (_drop("workload"), "workload", "Field required"),
        (_drop("container"), "container", "Field required"),
        (_drop("start"), "start", "Field required"),
        (_drop("end"), "end", "Field required"),
        (_drop("cpu"), "cpu", "Field required"),  # null is "not measured"; absent is damage
        (_drop("memoryLimit"), "memoryLimit", "Field required"),
        ({**_drop("memoryLimit"), "memory_limit": 1.0}, "memoryLimit", "Field required"),
        (row(namespace=""), "namespace", "at least 1 character"),
        (row(container=7), "container", "valid string"),
        (row(namespace="Shop"), "namespace", "'Shop' is not a Kubernetes namespace name"),
        (row(workload="w" * 254), "workload", "(254 characters) is not a Kubernetes workload"),
        (row(container="a_b"), "container", "at most 63 lower-case letters, digits and '-'"),
        (row(replicas=2), "replicas", "Extra inputs are not permitted"),
        (row(cpu="0.25"), "cpu", "must be a number"),
        (row(memory="256Mi"), "memory", "must be a number"),
        (row(cpu=True), "cpu", "must be a number"),
        (row(memoryLimit=False), "memoryLimit", "must be a number"),
        (row(cpu=-0.1), "cpu", "finite amount"),
        (row(memory=-1), "memory", "finite amount"),
        (row(memory=1e300), "memory", "finite amount"),
        (row(memory=10**400), "memory", "finite amount"),  # float() of it would overflow
        (row(start="0001-01-01T00:00:00+01:00"), "start", "out of range in UTC"),
        (row(start="2024-05-14T00:00:00"), "start", "timezone"),
        (row(end="2024-05-14T01:00:00"), "end", "timezone"),
        (row(start="yesterday"), "start", "not an RFC 3339 time: 'yesterday'"),
        (row(start=1715644800), "start", "RFC 3339"),
    ],
)
def test_a_malformed_row_names_source_row_and_field(bad: Any, field: str, words: str) -> None:
    with pytest.raises(ScheduleError) as raised:
        parse_schedule(text(row(), bad), "plan.json")
    message = str(raised.value)
    assert message.startswith(f"plan.json: row 1, {field}: ")
    assert words in message


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("field", ["cpu", "memory", "memoryLimit"])
def test_non_finite_amounts_are_refused(field: str, value: float) -> None:
    # tailor never writes NaN / Infinity (allow_nan=False), but Python's json reads them.
    document = json.dumps([row(**{field: value})])
    assert "NaN" in document or "Infinity" in document
    with pytest.raises(ScheduleError, match=rf"^plan\.json: row 0, {field}: .*finite amount"):
        parse_schedule(document, "plan.json")


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (row(end="2024-05-14T00:00:00Z"), "end is not after start"),
        (row(start="2024-05-14T02:00:00Z"), "end is not after start"),
        (row(memory=5e8, memoryLimit=4e8), "memoryLimit is below memory"),
    ],
)
def test_a_row_that_contradicts_itself_is_refused(bad: dict[str, Any], problem: str) -> None:
    with pytest.raises(ScheduleError, match=rf"^plan\.json: row 1: {problem}$"):
        parse_schedule(text(row(container="other"), bad), "plan.json")


def test_null_amounts_and_an_equal_memory_limit_are_accepted() -> None:
    rows = parse_schedule(
        text(row(cpu=None, memory=None, memoryLimit=None), row(container="b", memoryLimit=2**28)),
        "plan.json",
    )
    assert (rows[0].cpu, rows[0].memory, rows[0].memory_limit) == (None, None, None)
    assert rows[1].memory == rows[1].memory_limit
    assert isinstance(rows[1].cpu, float)


def test_overlapping_periods_of_one_container_refuse_the_file() -> None:
    later = row(start="2024-05-14T02:00:00Z", end="2024-05-14T03:00:00Z")
    overlapping = row(start="2024-05-14T00:30:00Z", end="2024-05-14T01:30:00Z")
    with pytest.raises(ScheduleError) as raised:
        parse_schedule(text(later, row(), overlapping), "plan.json")
    message = str(raised.value)
    assert message == (
        "plan.json: rows 1 and 2: periods of shop/web/app overlap at 2024-05-14T00:30:00+00:00"
    )


def test_a_long_period_overlapping_a_later_one_is_found() -> None:
    day = row(end="2024-05-15T00:00:00Z")
    evening = row(start="2024-05-14T20:00:00Z", end="2024-05-14T21:00:00Z")
    with pytest.raises(
        ScheduleError,
        match=r"^plan\.json: rows 0 and 1: periods of shop/web/app overlap at 2024-05-14T20:00:00",
    ):
        parse_schedule(text(evening, day), "plan.json")


def test_back_to_back_periods_and_other_containers_may_share_times() -> None:
    rows = parse_schedule(
        text(
            row(),
            row(start="2024-05-14T01:00:00Z", end="2024-05-14T02:00:00Z"),
            row(container="sidecar"),
            row(workload="api"),
            row(namespace="other"),
        ),
        "plan.json",
    )
    assert len(rows) == 5


def test_times_with_an_offset_are_compared_as_instants() -> None:
    rows = parse_schedule(
        text(row(start="2024-05-14T02:00:00+02:00", end="2024-05-14T03:00:00+02:00")), "p"
    )
    assert rows[0].start == T0
    assert due_targets(rows, T0)
    assert not due_targets(rows, T0 + timedelta(hours=1))


def test_due_targets_follow_half_open_periods() -> None:
    rows = parse_schedule(
        text(
            row(cpu=0.5),
            row(start="2024-05-14T01:00:00Z", end="2024-05-14T02:00:00Z", cpu=1.0),
            row(start="2024-05-14T03:00:00Z", end="2024-05-14T04:00:00Z", cpu=2.0),
            row(container="envoy", cpu=0.1, memory=None, memoryLimit=None),
        ),
        "plan.json",
    )
    key, envoy = ("shop", "web", "app"), ("shop", "web", "envoy")
    second = timedelta(seconds=1)
    assert due_targets(rows, T0 - second) == {}
    assert due_targets(rows, T0) == {
        key: Target(0.5, 268435456.0, 536870912.0),
        envoy: Target(0.1, None, None),
    }
    assert due_targets(rows, T0 + timedelta(hours=1) - second)[key].cpu_cores == 0.5
    at_boundary = due_targets(rows, T0 + timedelta(hours=1))
    assert at_boundary[key].cpu_cores == 1.0  # the new period starts, the old one has ended
    assert envoy not in at_boundary
    assert due_targets(rows, T0 + timedelta(hours=2)) == {}  # a gap: nothing in force
    assert due_targets(rows, T0 + timedelta(hours=3))[key].cpu_cores == 2.0
    assert due_targets(rows, T0 + timedelta(hours=4)) == {}
