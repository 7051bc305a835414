"""A certified lower bound on the relative slack that even a clairvoyant strategy can reach.

Why: a forecasting strategy is judged against real ones, but how far can slack
fall at all? Under the backtest's rules (metrics.py, engine.py) a strategy with
perfect foresight that changes each container's request at most C times per
container-day and falls short (CPU usage above the request, or memory peak
above limit = request: an OOM) in at most B windows fleet-wide cannot get its
relative slack S / R below the number returned here.

Certificate (Dinkelbach ratio + Lagrange): S / R <= theta is reachable only if
min over feasible requests of S - theta R <= 0. For any lambda >= 0,

    g(theta, lambda) = sum over days of min_day [sum_t (r_t - u_t)^+ - theta r_t
                       + lambda 1[u_t > r_t]] - lambda B

is below that minimum (weak duality, over a relaxed feasible set), so g > 0
proves every feasible strategy has a ratio above theta. Relaxations, each
only enlarging the feasible set: container-days are independent, each starts
at a free level (carry-over across midnight is ignored) and may change the
request at most floor(C x its length in days) times (the metric scales a
partial day's count to a full day; a day runs from its first evaluated window
to its last); days outside the change distribution (shorter than half a day,
not a container's only day) are unconstrained; the
p99-of-changes goal lets n - 1 - floor(0.99 (n - 1)) of the n counted days
exceed C (np.quantile's linear rule); there, and on free days, request = usage.
All numbers are float64; g must exceed a rounding tolerance to certify. The search
over theta and lambda is `ratio_search`, shared with the best-flat-blocks reference.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from recommender.backtest.history import ReplayHistory
from recommender.backtest.metrics import counted_days
from recommender.backtest.ratio_search import Minimum, RatioSearch
from recommender.backtest.settings import BacktestInputError
from tailor.durations import DAY

Resource = Literal["cpu", "memory"]
CHUNK_DAYS = 256  # days per DP pass: keeps the (changes, days, levels) state in cache


class HindsightInputError(BacktestInputError):
    """A limit the bound cannot be computed for; `setting` names the argument at fault."""

    def __init__(self, setting: str, message: str) -> None:
        self.setting = setting
        super().__init__(message)


def check_limits(changes_per_day: float, exempt_fraction: float) -> None:
    """The change cap and the exempt share, checked once for the CLI and notebooks alike
    (only the CLI used to check them; nan or inf gave a bound for no real limit)."""
    if not 0 <= changes_per_day < math.inf:  # compares a huge int exactly; refuses nan
        raise HindsightInputError(
            "changes_per_day",
            f"changes_per_day must be a finite number of at least 0 (0: one flat request "
            f"per container-day), got {changes_per_day!r}",
        )
    if not 0.0 <= exempt_fraction <= 0.5:  # also refuses nan
        raise HindsightInputError(
            "exempt_fraction",
            f"exempt_fraction must be in [0, 0.5] (0.01 exempts the days above the p99), "
            f"got {exempt_fraction!r}",
        )


def check_budget_rate(resource: Resource, rate: float) -> None:
    """A rate a budget can be made of: finite, at least 0, and a share (<= 1) for cpu."""
    if not (math.isfinite(rate) and rate >= 0):
        raise HindsightInputError(
            "budget_rate", f"a budget rate must be a finite number of at least 0, got {rate!r}"
        )
    if resource == "cpu" and rate > 1.0:
        raise HindsightInputError(
            "budget_rate", f"a cpu shortfall rate is a share of windows, at most 1; got {rate:g}"
        )


@dataclass(frozen=True)
class DayUsage:
    """Evaluated windows cut into container-days, as the backtest metrics cut them.

    usage:   (days, windows_per_day) one resource's usage, NaN = not evaluated.
    covered: (days,) evaluated windows of the day (either resource): the
             container-days of an OOM rate.
    span:    (days,) windows the container lived in the day (gaps included):
             sets the change limit of a partial day.
    counted: (days,) bool, the day enters the distribution of changes per day.
    """

    usage: np.ndarray
    covered: np.ndarray
    span: np.ndarray
    counted: np.ndarray
    step: int

    @property
    def container_days(self) -> float:
        return float(self.covered.sum() * self.step / DAY)

    @property
    def windows(self) -> int:
        return int((~np.isnan(self.usage)).sum())


@dataclass(frozen=True)
class HindsightBound:
    """The certified bound and how it was found."""

    bound: float  # every feasible strategy has relative slack > bound (or 0: nothing proven)
    multiplier: float  # lambda that certified it, in the units of the usage
    budget: float  # shortfall windows allowed (whole)
    exempt_days: int
    counted_days: int
    free_days: int
    evaluations: int


class _Problem:
    """Normalised day matrices sorted into chunks of similar level counts (prepared once)."""

    def __init__(self, days: DayUsage, changes_per_day: int, exempt_fraction: float) -> None:
        usage = np.asarray(days.usage, dtype=np.float64)
        per_day = usage.shape[1]
        valid = ~np.isnan(usage)
        self.scale = float(usage[valid].mean()) if valid.any() else 1.0
        self.scale = self.scale if self.scale > 0 else 1.0
        usage = usage / self.scale
        self.total = float(np.nansum(usage))
        self.day_total = np.nansum(usage, axis=1)
        counted = np.asarray(days.counted, dtype=bool) & valid.any(axis=1)
        self.free_total = float(self.day_total[~counted].sum())
        self.counted_days = int(np.sum(days.counted))  # the distribution's n, any resource
        self.free_days = int((~counted & valid.any(axis=1)).sum())
        self.exempt = exempt_count(self.counted_days, exempt_fraction)
        # n windows hold at most n - 1 changes: a larger cap (--changes-per-day 1e14) only
        # sized the DP's state to petabytes (and a 400-digit one overflowed); a day's span
        # is at most per_day windows, so a cap of per_day already allows them all
        cap = min(changes_per_day, per_day)
        limit = np.floor(cap * np.asarray(days.span) / per_day + 1e-9)
        limit = np.minimum(limit, np.maximum(valid.sum(axis=1) - 1, 0))
        # valid windows first (a change inside a gap is the same as one at its end)
        order = np.argsort(~valid, axis=1, kind="stable")
        packed = np.take_along_axis(usage, order, axis=1)[counted]
        self.packed_total = self.day_total[counted]
        levels = _candidate_levels(packed)
        count = (~np.isnan(levels)).sum(axis=1)
        by_size = np.argsort(count, kind="stable")
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for start in range(0, by_size.size, CHUNK_DAYS):
            rows = by_size[start : start + CHUNK_DAYS]
            width = int(count[rows].max())
            top = np.nanmax(levels[rows, :width], axis=1, keepdims=True)
            chunk_levels = np.where(np.isnan(levels[rows, :width]), top, levels[rows, :width])
            length = int((~np.isnan(packed[rows])).sum(axis=1).max())
            chunk_limit = limit[counted][rows].astype(np.int64)
            self.chunks.append((rows, packed[rows, :length], chunk_levels, chunk_limit))


def _candidate_levels(usage: np.ndarray) -> np.ndarray:
    """{0} and the distinct usage values of each day, sorted, NaN-padded.

    Why these suffice: on one constant segment the cost sum_t (r - u_t)^+ - theta r
    + lambda 1[u_t > r] is linear in r between consecutive usage values, drops
    at each usage value (a shortfall ends there) and grows above the largest
    (slope count - theta count >= 0 for theta <= 1), so its minimum over r >= 0
    is at 0 or at one of the segment's own usage values.
    """
    with_zero = np.concatenate([np.zeros((usage.shape[0], 1)), usage], axis=1)
    ordered = np.sort(with_zero, axis=1)
    repeat = np.zeros(ordered.shape, dtype=bool)
    repeat[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
    return np.sort(np.where(repeat, np.nan, ordered), axis=1)


def exempt_count(counted_days: int, exempt_fraction: float) -> int:
    """Days that may exceed the change limit while the (1 - p) quantile stays within it."""
    if exempt_fraction <= 0 or counted_days == 0:
        return 0
    rank = (1.0 - exempt_fraction) * (counted_days - 1)
    return counted_days - 1 - max(0, math.floor(rank - 1e-9))


def _window_cost(
    levels: np.ndarray, used: np.ndarray, theta: float, lam: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cost of each level in one window, with the window's validity and shortfalls."""
    valid = ~np.isnan(used)
    short = valid & (used > levels)
    cost = np.maximum(levels - used, 0.0) - theta * levels + np.where(short, lam, 0.0)
    return np.where(valid, cost, 0.0), valid, short


def _chunk_minima(
    usage: np.ndarray, levels: np.ndarray, limit: np.ndarray, theta: float, lam: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact per-day minimum over requests with at most limit[d] changes, plus R and N.

    State value[k, d, l]: best cost so far with at most k changes, the current
    level being l. A step either keeps the level or switches from the best
    level with one change fewer; those minima are kept to recover the path.
    """
    days, length = usage.shape
    changes = int(limit.max()) + 1
    value = np.zeros((changes, days, levels.shape[1]))
    best = np.empty((length, changes, days))
    best_level = np.empty((length, changes, days), dtype=np.int64)
    for t in range(length):
        cost, _, _ = _window_cost(levels, usage[:, t : t + 1], theta, lam)
        best_level[t] = value.argmin(axis=2)
        best[t] = np.take_along_axis(value, best_level[t][:, :, None], axis=2)[:, :, 0]
        np.minimum(value[1:], best[t][:-1, :, None], out=value[1:])
        value += cost
    final = value.min(axis=2)
    final[np.arange(changes)[:, None] > limit[None, :]] = np.inf
    k = final.argmin(axis=0)
    rows = np.arange(days)
    level = value[k, rows].argmin(axis=1)
    total = final[k, rows]
    path = total.copy()
    requested, shortfalls = np.zeros(days), np.zeros(days)
    for t in range(length - 1, -1, -1):
        chosen = levels[rows, level]
        cost, valid, short = _window_cost(chosen, usage[:, t], theta, lam)
        requested += np.where(valid, chosen, 0.0)
        shortfalls += short
        before = path - cost
        previous = best[t, np.maximum(k - 1, 0), rows]
        switch = (k > 0) & (before >= previous - 1e-9 * (1 + np.abs(previous) + np.abs(cost)))
        level = np.where(switch, best_level[t, np.maximum(k - 1, 0), rows], level)
        path = np.where(switch, previous, before)
        k = np.where(switch, k - 1, k)
    return total, requested, shortfalls


def _minimum(problem: _Problem, theta: float, lam: float) -> Minimum:
    """min of S - theta R + lambda N over the relaxed set (the exempt days chosen best)."""
    n = problem.packed_total.size
    value, requested, shortfalls = np.empty(n), np.empty(n), np.empty(n)
    for rows, usage, levels, limit in problem.chunks:
        value[rows], requested[rows], shortfalls[rows] = _chunk_minima(
            usage, levels, limit, theta, lam
        )
    if problem.exempt:
        gain = value + theta * problem.packed_total  # >= 0: request = usage is the window optimum
        free = np.argpartition(-gain, problem.exempt - 1)[: problem.exempt]
        free = free[gain[free] > 0]
        value[free] = -theta * problem.packed_total[free]
        requested[free] = problem.packed_total[free]
        shortfalls[free] = 0.0
    return Minimum(
        float(value.sum()) - theta * problem.free_total,
        float(requested.sum()) + problem.free_total,
        float(shortfalls.sum()),
    )


def slack_lower_bound(
    days: DayUsage,
    budget: float,
    changes_per_day: int = 6,
    exempt_fraction: float = 0.01,
) -> HindsightBound:
    """The largest theta proven: every strategy within the limits has slack / request > theta.

    budget: shortfall (or OOM) windows allowed over the whole fleet; only whole
    windows count, so it is rounded down. HindsightInputError for a limit out of range.
    """
    check_limits(changes_per_day, exempt_fraction)
    if not (math.isfinite(budget) and budget >= 0):  # inf printed a bound of 0 as certified
        raise HindsightInputError(
            "budget", f"budget must be a finite number of windows, at least 0; got {budget!r}"
        )
    whole = math.floor(budget + 1e-9)
    problem = _Problem(days, changes_per_day, exempt_fraction)
    search = RatioSearch(functools.partial(_minimum, problem), whole, problem.total)
    if problem.total > 0 and whole < days.windows:
        search.run()
    return HindsightBound(
        bound=search.certified,
        multiplier=search.certifier * problem.scale,
        budget=whole,
        exempt_days=problem.exempt,
        counted_days=problem.counted_days,
        free_days=problem.free_days,
        evaluations=search.evaluations,
    )


def container_days(history: ReplayHistory, resource: Resource) -> DayUsage:
    """Cut each container's windows after its warm-up into 24 h days (metrics.py's rule)."""
    arrays = history.usage
    per_day = max(1, DAY // arrays.step)
    values = arrays.cpu if resource == "cpu" else arrays.memory
    sampled = ~(np.isnan(arrays.cpu) & np.isnan(arrays.memory))
    start = history.evaluation_start
    span = np.maximum(history.last_window + 1 - start, 0)
    n_days = int(-(-span.max() // per_day)) if span.size else 0
    window = start[:, None, None] + per_day * np.arange(n_days)[None, :, None]
    window = window + np.arange(per_day)[None, None, :]
    inside = window <= history.last_window[:, None, None]
    clipped = np.minimum(window, arrays.n_windows - 1)
    rows = np.arange(arrays.n_series)[:, None, None]
    usage = np.where(inside, values[rows, clipped], np.nan).reshape(-1, per_day)
    seen = (inside & sampled[rows, clipped]).reshape(-1, per_day)
    covered = seen.sum(axis=1)
    span = inside.reshape(-1, per_day).sum(axis=1)  # the windows it lived: gaps count
    first = np.broadcast_to(np.arange(n_days) == 0, (arrays.n_series, n_days)).reshape(-1)
    counted = counted_days(span, first, per_day)
    keep = span > 0  # a day it lived without a sample still counts in the distribution
    return DayUsage(usage[keep], covered[keep], span[keep], counted[keep], arrays.step)


def budget_from_rate(days: DayUsage, resource: Resource, rate: float) -> float:
    """Shortfalls allowed: rate per evaluated window (cpu) or per container-day (memory)."""
    check_budget_rate(resource, rate)
    budget = rate * (days.windows if resource == "cpu" else days.container_days)
    if not math.isfinite(budget):
        raise HindsightInputError("budget_rate", f"a budget rate of {rate:g} is too large")
    return budget
