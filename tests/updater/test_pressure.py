"""The updater's memory-pressure reaction: raised at once, up only, bounded, held.

The pure rules on plain pods, then whole passes on a cluster held in memory (the
real-cluster run with Prometheus is tests/updater/test_pressure_cluster.py).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailor.api.vpa import PodResourcePolicy
from tailor.cli.main import app
from tailor.cli.memory_pressure import memory_pressure_flags
from tailor.memory_pressure import PressureReading, PressureRule
from tailor.quantity import Quantity
from tailor.schedule_file import ScheduleRow
from tests.cli_text import plain
from tests.in_memory_cluster import InMemoryCluster
from tests.updater.pods import Obj, container, container_status, node, pod
from updater.decide import Action
from updater.due_targets import Target
from updater.follow import PassOptions, follow_once
from updater.governance import Governance
from updater.plan import PodRules
from updater.pressure import (
    PRESSURE_RAISED,
    ContainerKey,
    MemoryPressure,
    Readings,
    floored,
    plan_pressure_raise,
    pressure_raise,
)

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
Mi = 2**20
RULE = PressureRule(window=timedelta(minutes=2))
UNDER = PressureReading(stalled_share=0.25, working_set=230 * Mi)


def _pod(memory: str = "128Mi", limit: str = "256Mi", annotations: Obj | None = None) -> Obj:
    requests = {"cpu": "100m", "memory": memory}
    found = pod(
        [container("app", requests, {"memory": limit}), container("side", requests)],
        name="web",
        statuses=[container_status("app", requests, requests)],
    )
    if annotations:
        found["metadata"]["annotations"] = annotations
    return found


def _readings(**shares: PressureReading) -> dict[ContainerKey, PressureReading]:
    return {("shop", "web", name): reading for name, reading in shares.items()}


def test_only_containers_under_sustained_pressure_are_raised_by_the_oom_bump() -> None:
    calm = PressureReading(stalled_share=0.05, working_set=120 * Mi)
    found = pressure_raise(_pod(), "shop", _readings(app=UNDER, side=calm), RULE, NOW)
    assert found is not None
    # upstream's OOM bump of max(request 128Mi, working set 230Mi): + 100 MiB
    assert found.targets == {"app": Target(None, 330 * Mi, None)}
    assert found.reason == (
        "memory pressure (app stalled 25% of the last 120 s at 230Mi: memory 128Mi -> 330Mi)"
    )
    assert pressure_raise(_pod(), "shop", _readings(side=calm), RULE, NOW) is None
    assert pressure_raise(_pod(), "other", _readings(app=UNDER), RULE, NOW) is None
    unknown = PressureReading(stalled_share=math.nan, working_set=math.nan)
    assert pressure_raise(_pod(), "shop", _readings(app=unknown), RULE, NOW) is None


def test_a_container_sharing_a_pod_level_budget_is_left_to_the_oom_path() -> None:
    """It has no request of its own, and a resize may not add one."""
    shared = pod([container("app")], name="web")
    shared["spec"]["resources"] = {"requests": {"memory": "512Mi"}, "limits": {"memory": "1Gi"}}
    assert pressure_raise(shared, "shop", _readings(app=UNDER), RULE, NOW) is None


def test_a_container_raised_within_the_window_is_not_raised_again() -> None:
    """Its window still averages the stalls from before the raise."""
    just_now = {PRESSURE_RAISED: f"app={330 * Mi}@{NOW.timestamp() - 60:.0f}"}
    assert (
        pressure_raise(_pod("330Mi", "660Mi", just_now), "shop", _readings(app=UNDER), RULE, NOW)
        is None
    )
    long_ago = {PRESSURE_RAISED: f"app={330 * Mi}@{NOW.timestamp() - 600:.0f}"}
    again = pressure_raise(
        _pod("330Mi", "660Mi", long_ago), "shop", _readings(app=UNDER), RULE, NOW
    )
    assert again is not None
    assert again.targets["app"].memory_bytes == 430 * Mi  # the bump of its 330Mi request


def test_the_vpas_max_allowed_bounds_the_raise_and_nothing_is_ever_lowered() -> None:
    def governed(most: str) -> Governance:
        policy = PodResourcePolicy.model_validate(
            {"containerPolicies": [{"containerName": "*", "maxAllowed": {"memory": most}}]}
        )
        return Governance(PodRules(resource_policy=policy))

    readings = Readings(RULE, _readings(app=UNDER))
    capped = plan_pressure_raise(_pod(), "shop", governed("300Mi"), readings, NOW)
    assert capped is not None and capped.refused is None
    [change] = capped.planned.containers  # type: ignore[union-attr]
    assert change.requests["memory"] == Quantity.parse("300Mi")
    assert change.limits["memory"] == Quantity.parse("600Mi")  # in proportion (2x)

    at_max = plan_pressure_raise(_pod(), "shop", governed("128Mi"), readings, NOW)
    assert at_max is not None
    assert at_max.refused is not None
    assert at_max.refused.endswith("not raised: its policy allows no more memory")
    above = plan_pressure_raise(_pod("200Mi"), "shop", governed("150Mi"), readings, NOW)
    assert above is not None and above.refused is not None
    assert "not raised: app's memory request is above what its policy allows" in above.refused
    assert plan_pressure_raise(_pod(), "shop", governed("300Mi"), None, NOW) is None  # off
    left_alone = Governance(PodRules(), leave_alone="no VerticalPodAutoscaler controls it")
    assert plan_pressure_raise(_pod(), "shop", left_alone, readings, NOW) is None


def test_a_raise_holds_as_a_floor_for_a_day() -> None:
    raised = {PRESSURE_RAISED: f"app={330 * Mi}@{NOW.timestamp() - 3600:.0f} junk side=x@y"}
    targets = {"app": Target(0.2, 128 * Mi, 128 * Mi), "side": Target(0.1, 64 * Mi, None)}
    held = floored(_pod(annotations=raised), targets, NOW)
    assert held["app"] == Target(0.2, 330 * Mi, None)  # the limit kept in proportion
    assert held["side"] == targets["side"]  # an unreadable entry is no floor
    later = floored(_pod(annotations=raised), targets, NOW + timedelta(days=1))
    assert later == targets


def _row(memory: float) -> ScheduleRow:
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return ScheduleRow.model_validate(
        {
            "namespace": "shop",
            "workload": "web",
            "container": "app",
            "start": (NOW - timedelta(hours=1)).strftime(stamp),
            "end": (NOW + timedelta(hours=1)).strftime(stamp),
            "cpu": 0.1,
            "memory": memory,
            "memoryLimit": 2 * memory,
        }
    )


def _requests(cluster: InMemoryCluster) -> Mapping[str, str]:
    [found] = cluster.pod_objects
    return dict(found["spec"]["containers"][0]["resources"]["requests"])


def test_a_pass_raises_at_once_records_the_raise_and_keeps_it_against_the_schedule() -> None:
    cluster = InMemoryCluster(pod_objects=[_pod()], nodes_by_name={"node-a": node()})
    rows = [_row(128 * Mi)]  # the schedule asks for what the pod has
    readings = _readings(app=UNDER)
    options = PassOptions(memory_pressure=MemoryPressure(RULE, lambda: readings))

    [outcome] = follow_once(cluster, rows, NOW, options)
    assert (outcome.action, outcome.applied) == (Action.RESIZE, True), outcome
    assert outcome.detail.startswith("memory pressure (app stalled 25%")
    assert Quantity.parse(_requests(cluster)["memory"]) == Quantity.parse("330Mi")
    [raised] = cluster.pod_objects
    annotation = raised["metadata"]["annotations"][PRESSURE_RAISED]
    assert annotation == f"app={330 * Mi}@{NOW.timestamp():.0f}"

    # a minute on, pressure still in the window: the schedule's 128Mi does not take it back
    later = NOW + timedelta(minutes=1)
    [kept] = follow_once(cluster, rows, later, options)
    assert kept.action is Action.NONE, kept
    assert Quantity.parse(_requests(cluster)["memory"]) == Quantity.parse("330Mi")
    # without the reaction, the schedule is followed
    [plain] = follow_once(
        InMemoryCluster(pod_objects=[_pod()], nodes_by_name={"node-a": node()}),
        rows,
        NOW,
        PassOptions(),
    )
    assert plain.action is Action.NONE


def test_a_raise_is_made_whatever_the_change_budget() -> None:
    spent = {
        "kube-tailor.io/resized-at": " ".join(str(NOW.timestamp() - 60 * i) for i in range(1, 8))
    }
    cluster = InMemoryCluster(
        pod_objects=[_pod(annotations=spent)], nodes_by_name={"node-a": node()}
    )
    options = PassOptions(
        memory_pressure=MemoryPressure(RULE, lambda: _readings(app=UNDER)), changes_per_day=6
    )
    [outcome] = follow_once(cluster, [_row(200 * Mi)], NOW, options)
    assert (outcome.action, outcome.applied) == (Action.RESIZE, True), outcome


def test_bad_pressure_flags_exit_2_before_any_connection(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text("not read: the flags are refused first")
    base = ["follow", "--once", "--recommendations", "--kubeconfig", str(config)]
    cases = {
        ("--memory-pressure-window", "30s"): "goes with --memory-pressure-prometheus URL",
        ("--memory-pressure-prometheus", "prometheus:9090"): "did you mean http://prometheus:9090",
        ("--memory-pressure-prometheus", "http://x", "--memory-pressure-stalled", "2"): (
            "above 0 and at most 1"
        ),
        ("--memory-pressure-prometheus", "http://x", "--memory-pressure-window", "0s"): (
            "must be at least 1s"
        ),
    }
    for flags, message in cases.items():
        result = CliRunner().invoke(app, [*base, *flags])
        assert result.exit_code == 2, (flags, result.output)
        assert message in plain(result.output), (flags, result.output)


def test_an_unreachable_prometheus_costs_the_reaction_one_pass_not_the_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pressure = memory_pressure_flags("http://127.0.0.1:1", 0.1, "2m")  # nothing listens
    assert pressure is not None
    cluster = InMemoryCluster(pod_objects=[_pod()], nodes_by_name={"node-a": node()})
    with caplog.at_level(logging.WARNING, logger="tailor.follow"):
        [outcome] = follow_once(
            cluster, [_row(200 * Mi)], NOW, PassOptions(memory_pressure=pressure)
        )
    assert (outcome.action, outcome.applied) == (Action.RESIZE, True)  # the schedule's resize
    assert "memory pressure not read this pass: cannot reach Prometheus" in caplog.text
