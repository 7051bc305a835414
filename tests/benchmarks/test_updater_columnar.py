"""The columnar pass of the updater experiment decides as the real pass, or refuses."""

import pytest

from benchmarks.updater_columnar import columnar_pass, planner
from benchmarks.updater_fleet import NOW, Counted, Fleet, schedule_rows, synthetic_cluster
from updater.decide import Action
from updater.follow import PassOptions, follow_once


def test_the_columnar_pass_decides_as_the_pass() -> None:
    fleet = Fleet(pods=200, nodes=10)
    rows = schedule_rows(fleet)
    real = follow_once(
        Counted(synthetic_cluster(fleet)).port(), rows, NOW, PassOptions(dry_run=True)
    )
    columnar = columnar_pass(Counted(synthetic_cluster(fleet)).port(), fleet, planner(None))
    assert columnar == list(real)
    assert {o.action for o in columnar} == {Action.RESIZE}


def test_a_fleet_without_room_is_left_to_the_pod_by_pod_pass() -> None:
    fleet = Fleet(pods=400, nodes=1)  # 400 pods growing on one 16-core node: most cannot
    with pytest.raises(RuntimeError, match="without room"):
        columnar_pass(Counted(synthetic_cluster(fleet)).port(), fleet, planner(None))
