"""The cyclic collector paused for a pass, and given back as it was after."""

from __future__ import annotations

import gc
import weakref

import pytest

from updater.collector import collector_paused


def test_no_collection_within_and_the_collector_back_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


class _Linked:
    """An object that can point at itself: a reference cycle."""

    other: object = None


def test_a_cycle_made_within_is_collected_after() -> None:
    with collector_paused():
        cycle = _Linked()
        cycle.other = cycle
        alive = weakref.ref(cycle)
        del cycle
        assert alive() is not None
    gc.collect()
    assert alive() is None


def test_a_collector_turned_off_by_someone_else_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_error_in_the_pass_gives_the_collector_back() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the pass failed")
    assert gc.isenabled()
