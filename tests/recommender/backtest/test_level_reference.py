"""The level-clairvoyant reference on cases small enough to work out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.backtest.level_reference import level_reference, peak_reference

BLOCK = 4


def _noisy(level: float, noise: float, blocks: int) -> np.ndarray:
    """Each block: level - noise and level + noise, alternating (mean level, spread noise)."""
    one = np.tile([level - noise, level + noise], BLOCK // 2)
    return np.tile(one, blocks)


def test_blocks_of_constant_usage_need_no_slack() -> None:
    cpu = np.repeat([[1.0, 3.0, 2.0, 5.0]], BLOCK, axis=1)
    result = level_reference(cpu, np.array([0]), BLOCK, 0.0)
    assert result.relative_slack == pytest.approx(0.0, abs=1e-12)
    assert result.shortfall_rate == 0.0


def test_noise_inside_blocks_costs_slack_the_level_cannot_remove() -> None:
    cpu = _noisy(5.0, 1.0, blocks=6)[None, :]
    covered = level_reference(cpu, np.array([0]), BLOCK, 0.0)
    # every block at 6 (mean + one spread): half its windows 2 cores below
    assert covered.relative_slack == pytest.approx(1.0 / 6.0, rel=1e-6)
    assert covered.shortfall_rate == 0.0
    # half the windows may fall short: 4 (mean - one spread) wastes nothing
    short = level_reference(cpu, np.array([0]), BLOCK, 0.5)
    assert short.relative_slack == pytest.approx(0.0, abs=1e-9)
    assert short.shortfall_rate == pytest.approx(0.5)


def test_the_fleet_spends_its_shortfalls_where_they_save_most() -> None:
    large = _noisy(100.0, 10.0, blocks=6)
    small = _noisy(1.0, 0.5, blocks=6)
    cpu = np.stack([large, small])
    result = level_reference(cpu, np.array([0, 0]), BLOCK, 0.25)
    # the large container's high windows go short (at 90 it wastes nothing) and the small
    # one is covered at 1.5: 12 core-windows of slack over 90 x 24 + 1.5 x 24 requested;
    # the other way round, covering the large one at 110 would waste 240
    assert result.shortfall_rate == pytest.approx(0.25)
    assert result.relative_slack == pytest.approx(12.0 / (90.0 * 24 + 1.5 * 24), rel=1e-6)


def test_windows_before_the_evaluation_start_do_not_count() -> None:
    cpu = np.repeat([[1.0, 3.0]], BLOCK, axis=1)
    spiked = cpu.copy()
    spiked[0, :BLOCK] = 50.0
    plain = level_reference(cpu, np.array([BLOCK]), BLOCK, 0.0)
    after = level_reference(spiked, np.array([BLOCK]), BLOCK, 0.0)
    assert after == plain
    assert plain.windows == BLOCK


def test_bad_arguments_are_refused() -> None:
    cpu = np.ones((1, 8))
    with pytest.raises(ValueError, match="block"):
        level_reference(cpu, np.array([0]), 0, 0.0)
    with pytest.raises(ValueError, match="rate"):
        level_reference(cpu, np.array([0]), BLOCK, 1.5)
    with pytest.raises(ValueError, match="no evaluated"):
        level_reference(np.full((1, 8), np.nan), np.array([0]), BLOCK, 0.0)


def test_each_memory_block_is_limited_at_its_own_peak() -> None:
    # block 1 uses 1 then 3 (peak 3: slack 2 of 6); block 2 is flat at 2 (no slack)
    memory = np.array([[9.0, 9.0, 1.0, 3.0, 2.0, 2.0]])
    result = peak_reference(memory, np.array([2]), 2)
    assert result.relative_slack == pytest.approx(2.0 / 10.0)
    assert result.shortfall_rate == 0.0 and result.windows == 4
    # a gap inside a block is neither used nor limited
    gapped = peak_reference(np.array([[1.0, np.nan, 4.0, 4.0]]), np.array([0]), 2)
    assert gapped.relative_slack == pytest.approx(0.0)
    longer = peak_reference(memory, np.array([2]), 4)  # one block at peak 3
    assert longer.relative_slack == pytest.approx((2.0 + 0.0 + 1.0 + 1.0) / 12.0)
    # series of different lengths: the shorter one's empty blocks count for nothing
    ragged = np.array([[np.nan] * 6 + [1.0, 2.0], [1.0, 3.0, 2.0, 2.0] + [np.nan] * 4])
    assert peak_reference(ragged, np.array([6, 0]), 2).relative_slack == pytest.approx(3 / 14)


def test_the_memory_reference_refuses_what_it_cannot_measure() -> None:
    with pytest.raises(ValueError, match="at least one window"):
        peak_reference(np.ones((1, 4)), np.array([0]), 0)
    with pytest.raises(ValueError, match="no evaluated memory"):
        peak_reference(np.full((1, 4), np.nan), np.array([0]), 2)
