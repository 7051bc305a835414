"""The collector kept off a pass's read objects, and given back what it had after."""

from __future__ import annotations

import gc

from updater.collector import read_objects_frozen


def test_what_is_alive_on_entry_is_frozen_within_and_given_back_after() -> None:
    listed = [{"metadata": {"name": f"web-{i}"}} for i in range(100)]
    assert gc.get_freeze_count() == 0
    with read_objects_frozen():
        assert gc.get_freeze_count() >= len(listed)
        made: dict[str, object] = {"spec": {}}  # made within: still the collector's
        assert any(made is found for found in gc.get_objects())
    assert gc.get_freeze_count() == 0
    assert any(listed is found for found in gc.get_objects())


def test_a_freeze_made_by_someone_else_is_left_to_them() -> None:
    theirs: dict[str, object] = {"metadata": {}}
    gc.freeze()
    try:
        with read_objects_frozen():
            pass
        # still out of the collector's reach: not unfrozen by the pass (the count itself
        # may drop as other threads free frozen objects, so it is not compared)
        assert gc.get_freeze_count() > 0
        assert not any(theirs is found for found in gc.get_objects())
    finally:
        gc.unfreeze()
    assert any(theirs is found for found in gc.get_objects())


def test_an_error_in_the_pass_gives_the_objects_back() -> None:
    try:
        with read_objects_frozen():
            raise RuntimeError("the pass failed")
    except RuntimeError:
        pass
    assert gc.get_freeze_count() == 0
