"""Following the lulls of on/off containers: pure pieces, then the live strategy."""

from __future__ import annotations

import numpy as np
import pytest

from recommender.forecast.midblock import (
    LullTracker,
    idle_requests,
    lull_shortfall_rate,
)
from recommender.forecast.settings import (
    ForecastSettings,
    ForecastSettingsError,
    LullSettings,
    MemorySettings,
)
from tests.recommender.forecast import synthetic as syn
from tests.recommender.forecast.test_strategy import replay


def test_the_idle_request_covers_the_idle_windows_only() -> None:
    idle = np.linspace(0.01, 0.1, 100)  # idle noise, 90th percentile 0.091
    busy = np.full(50, 8.0)
    cpu = np.concatenate([idle, busy])[None, :]
    level = idle_requests(cpu, np.array([8.0]), quantile=0.9, margin=0.1, floor=0.005)
    expected = np.quantile(idle, 0.9, method="higher") * 1.1
    assert level[0] == pytest.approx(expected)
    # a series never idle has no idle request; the floor holds for a silent one
    never = idle_requests(np.full((1, 10), 5.0), np.array([5.0]), 0.9, 0.1, 0.005)
    silent = idle_requests(np.zeros((1, 10)), np.array([1.0]), 0.9, 0.1, 0.005)
    assert np.isnan(never[0]) and silent[0] == 0.005


def test_only_the_job_starts_of_following_series_count_against_the_target() -> None:
    job = np.array([0.0, 0.0, 5.0, 5.0, 0.0, 5.0, 0.0, 0.0])  # two starts
    cpu = np.vstack([job, job])
    scale = np.array([5.0, 5.0])
    both = lull_shortfall_rate(cpu, scale, np.array([True, True]), windows_per_start=2)
    one = lull_shortfall_rate(cpu, scale, np.array([True, False]), windows_per_start=2)
    assert both == pytest.approx(2 * 2 * 2 / 16)
    assert one == pytest.approx(both / 2)
    assert lull_shortfall_rate(cpu, scale, np.array([False, False]), 2) == 0.0


def test_a_drop_needs_a_long_enough_idle_run_and_a_real_saving() -> None:
    tracker = LullTracker.empty(3)
    scale = np.array([8.0, 8.0, 8.0])
    for _ in range(2):
        tracker.observe(np.array([0.01, 0.01, 6.0]), scale)
    request = np.array([8.0, 0.5, 8.0])
    idle_need = np.array([0.1, 0.1, 0.1])
    eligible = np.ones(3, dtype=bool)
    rules = LullSettings(after_windows=2, min_saving=0.3, reserve=1)
    # with a single change left, none may drop: the restore needs it
    assert not tracker.drop(request, idle_need, eligible, np.ones(3), scale, rules).any()
    drops = tracker.drop(request, idle_need, eligible, np.full(3, 2), scale, rules)
    # series 1 would save too little, series 2 is busy
    assert drops.tolist() == [True, False, False]
    # a series already dropped does not drop again
    assert not tracker.drop(request, idle_need, eligible, np.full(3, 2), scale, rules).any()
    # a busy window after the drop restores the level from before it, capped at the ceiling
    wanted = tracker.restore_level(
        np.array([6.6, 6.6, 6.6]), np.array([6.0, 6.0, 6.0]), scale, np.full(3, 7.5)
    )
    assert wanted.tolist() == [7.5, 6.6, 6.6]
    # a blip well below the busy level does not bring the whole busy level back
    blip = tracker.restore_level(np.array([1.1]), np.array([1.0]), scale[:1], np.full(1, 7.5))
    assert blip[0] == pytest.approx(1.1)


def _job(days: float) -> tuple[np.ndarray, np.ndarray]:
    cpu = np.vstack([syn.on_off(days), syn.noise(days)])
    memory = np.full(cpu.shape, 1.0 * syn.GIB)
    return cpu, memory


def test_a_batch_container_is_dropped_mid_block_when_its_job_ends() -> None:
    cpu, memory = _job(days=5.0)
    following, _, _, strategy = replay(cpu, memory, ForecastSettings())
    blocked, _, _, _ = replay(cpu, memory, ForecastSettings(lulls=LullSettings(follow=False)))
    assert strategy.plan is not None and strategy.plan.shape.batch[0]
    job = cpu[0]
    after = np.arange(2 * syn.PER_DAY, job.size)
    # drops land between block boundaries (12 windows), a few windows after a job ends
    falls = after[(following[0, after - 1] > 1.0) & (following[0, after] < 1.0)]
    settle = ForecastSettings().lulls.after_windows
    mid_block = [t for t in falls if t % 12 != 0 and np.all(job[t - settle : t] < 0.1)]
    assert len(mid_block) >= 1
    # the change budget (a drop keeps one change for the restore) decides how many,
    # and together they save CPU over the same replay without lull following
    idle = after[job[after] < 0.1]
    assert following[0, idle].sum() < 0.8 * blocked[0, idle].sum()
    # the job still gets its CPU back: most busy windows are covered
    busy = after[job[after] > 1.0]
    assert np.mean(following[0, busy] >= job[busy]) > 0.9


def test_a_job_starting_after_a_drop_is_answered_after_one_window() -> None:
    cpu, memory = _job(days=5.0)
    requests, _, _, _ = replay(cpu, memory, ForecastSettings())
    job = cpu[0] > 1.0
    starts = np.flatnonzero(job & ~np.roll(job, 1))
    starts = starts[starts > 2 * syn.PER_DAY]
    after_drop = starts[requests[0, starts] < 1.0]
    assert after_drop.size >= 2
    # short in the window the job starts in, covered from the next one on
    assert np.all(requests[0, after_drop + 1] >= cpu[0, after_drop + 1])


def test_a_batch_request_keeps_its_busy_level_through_a_jobs_slower_phase() -> None:
    days = 6.0
    cpu = syn.on_off(days)
    busy = cpu > 1.0
    into = np.zeros(cpu.size, dtype=np.int64)  # windows since the job started
    for t in range(1, cpu.size):
        into[t] = into[t - 1] + 1 if busy[t] and busy[t - 1] else 0
    cpu = np.where(busy & (into >= 12), 2.8, cpu)  # after an hour, 70 % of the first pace
    memory = np.full((2, cpu.size), syn.GIB)
    requests, _, _, strategy = replay(np.vstack([cpu, syn.noise(days)]), memory)
    assert strategy.plan is not None and strategy.plan.shape.batch[0]
    after = np.arange(2 * syn.PER_DAY, cpu.size)
    in_job = after[busy[after] & busy[after - 1]]
    # a cut to 2.8 cores would still be in the busy band: not worth a change mid-job
    assert np.all(requests[0, in_job] >= requests[0, in_job - 1])
    # while the lulls between jobs are still followed
    idle = after[~busy[after]]
    assert np.any(requests[0, idle] < 1.0)


def _job_with_memory(days: float) -> tuple[np.ndarray, np.ndarray]:
    cpu = np.vstack([syn.on_off(days), syn.noise(days)])
    job = cpu[0] > 1.0
    started = job & ~np.roll(job, 1)
    memory = np.where(job, 6.0 * syn.GIB, 0.3 * syn.GIB)
    memory = np.where(started, 1.0 * syn.GIB, memory)  # a job grows after its first window
    cpu[0, :3] = 4.0  # a job already running as the history begins: its size is known
    memory[:3] = 6.0 * syn.GIB
    return cpu, np.vstack([memory, np.full(cpu.shape[1], 1.0 * syn.GIB)])


def test_an_oom_hold_keeps_memory_up_through_a_lull() -> None:
    cpu, memory = _job_with_memory(days=6.0)
    memory[0, 2 * syn.PER_DAY + 5 :] *= 2.0  # a bigger job: killed once, then held
    settings = ForecastSettings(memory=MemorySettings(oom_hold_hours=24 * 10))
    _, limits, ooms, _ = replay(cpu, memory, settings)
    first_kill = int(np.flatnonzero(ooms[0])[-1])
    assert first_kill >= 2 * syn.PER_DAY
    held = np.arange(first_kill + 1, cpu.shape[1])
    assert np.all(np.diff(limits[0, held]) >= 0)  # never lowered while the hold lasts


def test_a_batch_request_stays_under_its_peak_ceiling() -> None:
    cpu, memory = _job(days=4.0)
    settings = ForecastSettings()
    requested, _, _, _ = replay(cpu, memory, settings)
    late = slice(2 * syn.PER_DAY, None)
    peak = np.max(cpu[0, : 2 * syn.PER_DAY])
    assert np.nanmax(requested[0, late]) <= peak * (1.0 + settings.batch_peak_margin) + 1e-9


@pytest.mark.parametrize(
    "bad",
    [
        {"after_windows": 0},
        {"min_saving": 1.5},
        {"idle_quantile": 0.0},
        {"reserve": 0},
        {"target_floor": 2.0},
    ],
)
def test_bad_lull_settings_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ForecastSettingsError):
        LullSettings(**bad)  # type: ignore[arg-type]


def test_a_negative_batch_peak_margin_is_refused() -> None:
    with pytest.raises(ForecastSettingsError):
        ForecastSettings(batch_peak_margin=-0.1)


def test_a_batch_request_rises_only_once_usage_reaches_it() -> None:
    # every other job runs light and on and off (as some of vm-61's do): the request
    # restored for it is partial, and the plan forecasts more; a raise while usage stays
    # under the request would spend a change the next lull drop needs
    days = 6.0
    rng = np.random.default_rng(5)
    cpu = syn.on_off(days)
    busy = cpu > 1.0
    job = np.cumsum(busy & ~np.roll(busy, 1))  # number of the job (or of the lull after it)
    weak = busy & (job % 2 == 0)  # every other job runs light and on and off
    cpu = np.where(weak, rng.choice([0.0, 0.5, 1.5, 2.0], cpu.size), cpu)
    memory = np.full((2, cpu.size), syn.GIB)
    requests, _, _, strategy = replay(np.vstack([cpu, syn.noise(days)]), memory)
    assert strategy.plan is not None and strategy.plan.shape.batch[0]
    after = np.arange(2 * syn.PER_DAY, cpu.size)
    raised = after[requests[0, after] > requests[0, after - 1] * (1 + 1e-9)]
    assert raised.size > 0
    assert np.all(cpu[raised - 1] >= requests[0, raised - 1])
