"""The backtest notebook on its default input (three Bitbrains VMs, three days): every
strategy's frontier, the worst containers' timelines and the changes, all drawn."""

from __future__ import annotations

from typing import Any

import pytest

from tests.notebooks.running import HANG_GUARD, execute, images, tagged

PROBE = """
import json
print(json.dumps({
    "containers": result.containers,
    "container_days": result.container_days,
    "strategies": list(result.strategies),
    "points": {name: len(points) for name, points in result.frontiers.items()},
    "defaults": {
        name: sum(bool(point["setting"].get("default")) for point in points)
        for name, points in result.frontiers.items()
    },
    "readings": sorted(result.readings),
    "rows": rows,
    "worst": sorted(set(worst["strategy"])),
}))
"""

pytestmark = HANG_GUARD


@pytest.fixture(scope="module")
def ran() -> tuple[Any, dict[str, Any]]:
    notebook, (probe,) = execute("backtest_my_history.ipynb", PROBE)
    return notebook, probe


def test_it_replays_the_default_vms_through_every_strategy(
    ran: tuple[Any, dict[str, Any]],
) -> None:
    _, probe = ran
    assert probe["containers"] == 3
    # 3 VMs x (3 days - 1 warming up), less the windows the trace lacks
    assert probe["container_days"] == pytest.approx(3 * 2, abs=0.2)
    assert probe["strategies"] == ["vpa", "krr", "autopilot", "forecast"]


def test_it_draws_every_strategys_frontier_read_off_at_vpas_risk(
    ran: tuple[Any, dict[str, Any]],
) -> None:
    notebook, probe = ran
    assert set(probe["points"]) == set(probe["strategies"])
    assert all(count >= 9 for count in probe["points"].values())  # a grid, not a point
    assert all(count == 1 for count in probe["defaults"].values())
    assert probe["readings"] == sorted(probe["strategies"])
    assert images(tagged(notebook, "frontier")) == 2  # the frontiers and the defaults' scatter


def test_it_draws_the_worst_containers_and_the_changes(
    ran: tuple[Any, dict[str, Any]],
) -> None:
    notebook, probe = ran
    assert probe["worst"] == sorted(probe["strategies"])  # every strategy's worst is listed
    assert 1 <= len(probe["rows"]) <= 3
    assert images(tagged(notebook, "worst")) == len(probe["rows"])
    assert images(tagged(notebook, "changes")) == 2
