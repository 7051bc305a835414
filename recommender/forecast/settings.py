"""Every knob of the forecasting recommender, in one frozen value.

A run is fully described by its input and one `ForecastSettings`: nothing is read
from globals or the environment. Defaults were tuned on the Bitbrains months
2013-7 and 2013-8 only; what each rule buys is measured in docs/results.
The knobs a user turns (risk, budget, memory headroom) are top-level; the rules'
own knobs sit in groups, set by dotted name (`reactions.react_margin=0.2`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from recommender.overrides import SettingsError, require
from tailor.durations import DAY, HOUR, DurationError, whole_windows

MIB = 2**20
# A year and a day of raw history per container; a billion days used to end in an
# OverflowError or a MemoryError deep in numpy instead of a settings error.
MAX_HISTORY_DAYS = 366.0

BatchSizing = Literal["mean", "percentile"]
ShortfallMode = Literal["vpa", "fixed"]


class ForecastSettingsError(SettingsError):
    """A setting outside the range the recommender can work with."""


@dataclass(frozen=True)
class ModelSettings:
    """The forecast of block means (Holt-Winters, damped trend; see `holtwinters`).

    level_alphas: candidate level smoothing values (per block); each container uses
        the one (or the persistence forecast) whose recent errors cost the least margin.
    persistence_windows: the persistence forecast (mean of the last windows) that
        competes with Holt-Winters, per series: batch jobs switch state and stay.
    trend_beta, trend_damping, season_gamma: the other smoothing parameters (gamma
        per cycle).
    season_threshold: autocorrelation at the cycle length above which a daily or
        weekly cycle counts as detected (a cycle is used only when the data shows it).
    weekly_gain: how much more the weekly than the daily autocorrelation must be for
        a weekly cycle to be used instead of a daily one.
    """

    level_alphas: tuple[float, ...] = (0.05, 0.2, 0.5, 0.9)
    persistence_windows: int = 3
    trend_beta: float = 0.02
    trend_damping: float = 0.9
    season_gamma: float = 0.2
    season_threshold: float = 0.3
    weekly_gain: float = 0.1

    def __post_init__(self) -> None:
        checks = [
            (
                len(self.level_alphas) > 0 and all(0.0 < a <= 1.0 for a in self.level_alphas),
                "level_alphas must be non-empty values in (0, 1]",
            ),
            (self.persistence_windows >= 1, "persistence_windows must be at least 1"),
            (0.0 <= self.trend_beta <= 1.0, "trend_beta must be in [0, 1]"),
            (0.0 <= self.trend_damping <= 1.0, "trend_damping must be in [0, 1]"),
            (0.0 <= self.season_gamma <= 1.0, "season_gamma must be in [0, 1]"),
            (-1.0 < self.season_threshold < 1.0, "season_threshold must be in (-1, 1)"),
        ]
        require(checks, ForecastSettingsError)


@dataclass(frozen=True)
class HysteresisSettings:
    """When a block boundary moves a request (see `schedule`): every change is a resize.

    decrease_threshold: a planned decrease must lower the request by this share ...
    min_decrease_share: ... and by this share of the recent peak (a small cut is not
        worth one of the day's few changes).
    increase_threshold: a planned increase waits until the need exceeds the request
        by this share (a shortfall still triggers a reaction).
    cover_blocks: a new level covers the requirement of this many blocks ahead, so a
        ramp costs one change, not one per block.
    """

    decrease_threshold: float = 0.15
    min_decrease_share: float = 0.05
    increase_threshold: float = 0.1
    cover_blocks: int = 3

    def __post_init__(self) -> None:
        checks = [
            (0.0 <= self.decrease_threshold < 1.0, "decrease_threshold must be in [0, 1)"),
            (0.0 <= self.min_decrease_share < 1.0, "min_decrease_share must be in [0, 1)"),
            (self.increase_threshold >= 0.0, "increase_threshold cannot be negative"),
            (self.cover_blocks >= 1, "cover_blocks must be at least 1"),
        ]
        require(checks, ForecastSettingsError)


@dataclass(frozen=True)
class ReactionSettings:
    """Mid-block reactions: CPU raised between boundaries after a shortfall.

    react_after_windows: consecutive windows clearly above the request before a raise.
    react_margin: headroom over the recent usage in such a raise (and over what was
        seen, for a series too young for margins).
    react_min_fraction: a window counts towards a reaction only when its usage exceeds
        the request by this share of the series' recent peak: noise does not trigger
        resizes, a job starting does.
    reactions_per_day: mid-block raises per day the margins are calibrated to need at
        most (the rest of the budget goes to planned changes).
    busy_lookback_hours: an idle block this soon after a busy window has its own
        margin: jobs come in bursts.
    """

    react_after_windows: int = 2
    react_margin: float = 0.1
    react_min_fraction: float = 0.1
    reactions_per_day: float = 2.0
    busy_lookback_hours: float = 3.0

    def __post_init__(self) -> None:
        checks = [
            (self.react_after_windows >= 1, "react_after_windows must be at least 1"),
            (self.react_margin >= 0.0, "react_margin cannot be negative"),
            (self.react_min_fraction >= 0.0, "react_min_fraction cannot be negative"),
            (self.busy_lookback_hours > 0.0, "busy_lookback_hours must be positive"),
            *_spans_within_the_history_limit(self),
        ]
        require(checks, ForecastSettingsError)


@dataclass(frozen=True)
class MemorySettings:
    """The memory limit (= request): a limit too low kills the container (see `memory`).

    memory_recent_hours: the limit never drops below the peak of this recent past.
    memory_peak_days: how far back the peak a limit covers reaches (the upstream VPA
        keeps eight days of daily peaks).
    memory_state_quantile: quantile of the memory seen in a CPU state that sizes the
        limit while the container is forecast in that state (1 = the peak).
    oom_tolerance_per_day: extra OOM kills per container-day that sizing memory per
        CPU state (low while a batch job is idle) may cost, replayed over the
        container's own past; above it the limit covers the overall peak.
    oom_worth_bytes: memory limit lowered on average that is worth one more kill a day
        when sizing per CPU state (inf = none is).
    oom_bump_factor, oom_bump_min_bytes: an OOM kill raises the limit to
        max(limit x factor, (limit + min_bytes) x (1 + memory_margin)) at once: about
        what the upstream VPA's bump and its margin give together ...
    oom_hold_hours: ... and no decrease follows for this long.
    """

    memory_recent_hours: float = 2.0
    memory_peak_days: float = 7.0
    memory_state_quantile: float = 1.0
    oom_tolerance_per_day: float = 0.02
    oom_worth_bytes: float = 4096 * MIB
    oom_bump_factor: float = 1.4
    oom_bump_min_bytes: float = 100 * MIB
    oom_hold_hours: float = 24.0

    def __post_init__(self) -> None:
        checks = [
            (self.memory_recent_hours > 0.0, "memory_recent_hours must be positive"),
            (self.memory_peak_days > 0.0, "memory_peak_days must be positive"),
            (0.5 <= self.memory_state_quantile <= 1.0, "memory_state_quantile in [0.5, 1]"),
            (self.oom_tolerance_per_day >= 0.0, "oom_tolerance_per_day cannot be negative"),
            (self.oom_worth_bytes > 0.0, "oom_worth_bytes must be positive"),
            (self.oom_bump_factor >= 1.0, "oom_bump_factor must be at least 1"),
            (self.oom_bump_min_bytes >= 0.0, "oom_bump_min_bytes cannot be negative"),
            (self.oom_hold_hours >= 0.0, "oom_hold_hours cannot be negative"),
            *_spans_within_the_history_limit(self),
        ]
        require(checks, ForecastSettingsError)


@dataclass(frozen=True)
class LullSettings:
    """How the `forecast` strategy follows the lulls of on/off containers (see `lulls`).

    follow: drop CPU mid-block to the idle need once a batch container has been
        idle for `after_windows` windows in a row ...
    min_saving: ... when that saves at least this share of its recent peak, and
        while the change budget still holds `reserve` changes for the restore.
    idle_quantile: quantile of the idle windows the idle request covers (plus
        the strategy's `react_margin`).
    target_floor: the job starts lulls will leave short come off the fleet target
        the margins may spend, down to this share of `target_cpu_shortfall`.
    long_after, frees_within: a lull already idle for `long_after` windows may
        drop with the last change left when the budget frees another one for the
        restore within `frees_within` windows (0 = never): a long lull is likely
        to last, and waiting for the budget kept the busy level through most of it.
    """

    follow: bool = True
    after_windows: int = 2
    min_saving: float = 0.5
    idle_quantile: float = 0.9
    target_floor: float = 0.2
    reserve: int = 1
    long_after: int = 24
    frees_within: int = 96

    def __post_init__(self) -> None:
        checks = [
            (self.after_windows >= 1, "lulls: after_windows must be at least 1"),
            (0.0 <= self.min_saving <= 1.0, "lulls: min_saving must be in [0, 1]"),
            (0.0 < self.idle_quantile <= 1.0, "lulls: idle_quantile must be in (0, 1]"),
            (0.0 <= self.target_floor <= 1.0, "lulls: target_floor must be in [0, 1]"),
            (self.reserve >= 1, "lulls: reserve must be at least 1"),
            (self.long_after >= 0, "lulls: long_after cannot be negative"),
            (self.frees_within >= 0, "lulls: frees_within cannot be negative"),
        ]
        require(checks, ForecastSettingsError)


@dataclass(frozen=True)
class SpikeSettings:
    """How the `forecast` strategy hands back a reaction once a serving burst is over
    (see `spikes`).

    release: return to the request from before a reaction once usage has stayed
        at or below it for `after_windows` windows in a row ...
    min_saving: ... when that saves at least this share of the recent peak, and
        while the change budget still holds `reserve` changes for the next reaction.
    last_change_after: with a single change left, a serving container's reaction
        waits for this many windows above the request: a short burst is let
        through rather than answered with a raise nothing could hand back.
    """

    release: bool = True
    after_windows: int = 2
    min_saving: float = 0.3
    reserve: int = 0
    last_change_after: int = 6

    def __post_init__(self) -> None:
        checks = [
            (self.after_windows >= 1, "spikes: after_windows must be at least 1"),
            (0.0 <= self.min_saving <= 1.0, "spikes: min_saving must be in [0, 1]"),
            (self.reserve >= 0, "spikes: reserve cannot be negative"),
            (self.last_change_after >= 1, "spikes: last_change_after must be at least 1"),
        ]
        require(checks, ForecastSettingsError)


@dataclass(frozen=True)
class ForecastSettings:
    """Settings of the `forecast` strategy and of `recommend_forecast`.

    cpu_shortfall_mode: "vpa" (default) targets `vpa_parity_factor` times the shortfall
        rate the upstream VPA's sizing rule would have had on the same containers'
        recent past (see `parity`), never below `target_cpu_shortfall`: never riskier
        than the VPA it replaces; "fixed" targets `target_cpu_shortfall`.
    target_cpu_shortfall: fraction of windows, over all containers planned together,
        whose CPU usage may exceed the request; margins spend it where it saves the
        most cores (see `allocation`).
    vpa_parity_factor: the share of the VPA's shortfall rate targeted in mode "vpa".
    max_container_shortfall: the largest shortfall rate any one container is planned for.
    batch_cpu_sizing: "mean" sizes batch (on/off) containers on the forecast mean, as
        the original VPA design asks; "percentile" treats them like serving containers.
    update_period_seconds: length of one schedule block (requests change at most once
        per block, apart from reactions to a shortfall or an OOM).
    horizon_seconds: how far the published schedule reaches.
    history_days: raw history kept per container (seasonality needs two cycles), at
        most MAX_HISTORY_DAYS.
    residual_days: how much recent error history calibrates the margins.
    max_changes_per_day: the change budget, a hard cap on request changes in any 24 h
        (the user's dial: each change is a resize).
    reserved_changes: part of that cap a planned decrease leaves for the reaction that
        may have to undo it.
    memory_margin: headroom over the memory peaks the limit covers.
    batch_peak_margin: a batch container's request never exceeds its recent peak times
        1 + this (its jobs run at their own ceiling).
    chunk_series: `recommend_forecast` plans series in chunks of this many, each one
        fleet for the shortfall allocation and one unit of parallel work: small enough
        for a chunk's arrays to stay in the caches, many enough for threads to share.
    min_cpu_cores, min_memory_bytes: smallest request ever proposed.
    model, hysteresis, reactions, memory, lulls, spikes: the rules' own knobs (see
        each group).
    """

    cpu_shortfall_mode: ShortfallMode = "vpa"
    target_cpu_shortfall: float = 0.005
    vpa_parity_factor: float = 0.6
    max_container_shortfall: float = 0.1
    batch_cpu_sizing: BatchSizing = "percentile"
    update_period_seconds: int = HOUR
    horizon_seconds: int = DAY
    history_days: float = 14.0
    residual_days: float = 7.0
    max_changes_per_day: int = 6
    reserved_changes: int = 1
    memory_margin: float = 0.2
    batch_peak_margin: float = 0.03
    chunk_series: int = 512
    min_cpu_cores: float = 0.005
    min_memory_bytes: float = 64 * MIB
    model: ModelSettings = field(default_factory=ModelSettings)
    hysteresis: HysteresisSettings = field(default_factory=HysteresisSettings)
    reactions: ReactionSettings = field(default_factory=ReactionSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    lulls: LullSettings = field(default_factory=LullSettings)
    spikes: SpikeSettings = field(default_factory=SpikeSettings)

    def __post_init__(self) -> None:
        checks = [
            (0.0 < self.target_cpu_shortfall < 0.5, "target_cpu_shortfall must be in (0, 0.5)"),
            (
                self.target_cpu_shortfall <= self.max_container_shortfall < 1.0,
                "max_container_shortfall must be in [target_cpu_shortfall, 1)",
            ),
            (self.cpu_shortfall_mode in ("vpa", "fixed"), "cpu_shortfall_mode: vpa|fixed"),
            (0.0 < self.vpa_parity_factor <= 1.0, "vpa_parity_factor must be in (0, 1]"),
            (self.batch_cpu_sizing in ("mean", "percentile"), "batch_cpu_sizing: mean|percentile"),
            (self.update_period_seconds >= 60, "update_period_seconds must be at least 60"),
            (
                self.horizon_seconds >= self.update_period_seconds,
                "horizon_seconds must cover at least one update period",
            ),
            (
                1.0 <= self.history_days <= MAX_HISTORY_DAYS,
                f"history_days must be in [1, {MAX_HISTORY_DAYS:g}]",
            ),
            (0.0 < self.residual_days <= self.history_days, "residual_days in (0, history_days]"),
            (self.max_changes_per_day >= 1, "max_changes_per_day must be at least 1"),
            (
                0 <= self.reserved_changes < self.max_changes_per_day,
                "reserved_changes must be below max_changes_per_day",
            ),
            (self.memory_margin >= 0.0, "memory_margin cannot be negative"),
            (self.batch_peak_margin >= 0.0, "batch_peak_margin cannot be negative"),
            (self.chunk_series >= 1, "chunk_series must be at least 1"),
            (self.min_cpu_cores > 0.0, "min_cpu_cores must be positive"),
            (self.min_memory_bytes > 0.0, "min_memory_bytes must be positive"),
            *_spans_within_the_history_limit(self),
        ]
        require(checks, ForecastSettingsError)

    def with_budget(self, changes_per_day: int) -> ForecastSettings:
        """These settings at another change budget (the user's dial: `--changes-per-day`,
        a VPA's `kube-tailor.io/changes-per-day`); the reserve for reactions stays below it."""
        reserved = min(self.reserved_changes, changes_per_day - 1)
        return replace(self, max_changes_per_day=changes_per_day, reserved_changes=reserved)

    def blocks_per(self, seconds: float) -> int:
        """How many update periods fit in `seconds` (at least one)."""
        return max(1, round(seconds / self.update_period_seconds))

    def windows_per_block(self, step: int) -> int:
        """Sample windows per update period for a data step of `step` seconds.

        A period that is not a whole number of steps cannot be kept: it used to be
        rounded, so 7-minute periods on 5-minute data became 5-minute blocks and the
        24 h schedule silently covered 17 h.
        """
        try:
            return whole_windows(self.update_period_seconds, step, "update_period_seconds")
        except DurationError as error:
            raise ForecastSettingsError(str(error)) from None


_SPAN_UNITS = {"_days": DAY, "_hours": HOUR, "_seconds": 1.0}


def _spans_within_the_history_limit(settings: Any) -> list[tuple[bool, str]]:
    """Every span setting (…_days, …_hours, …_seconds) of a settings group at most
    MAX_HISTORY_DAYS: a huge one ended in an OverflowError, or a hang."""
    limit = MAX_HISTORY_DAYS * DAY
    checks = []
    for name in (f.name for f in dataclasses.fields(settings)):
        value = getattr(settings, name)
        unit = next((u for suffix, u in _SPAN_UNITS.items() if name.endswith(suffix)), None)
        if unit is not None and isinstance(value, int | float) and not isinstance(value, bool):
            within = value * unit <= limit
            checks.append((within, f"{name} must span at most {MAX_HISTORY_DAYS:g} days"))
    return checks
