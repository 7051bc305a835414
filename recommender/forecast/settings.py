"""Every knob of the forecasting recommender, in one frozen value.

A run is fully described by its input and one `ForecastSettings`: nothing is read
from globals or the environment. The knobs a user turns (risk, budget, memory headroom)
are top-level; the rules' own knobs sit in groups, set by dotted name
(`reactions.react_margin=0.2`). Each field declares its valid range once
(`metadata=within(...)`, see `recommender.overrides.Checked`), checked when a group is built.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from recommender.overrides import (
    AT_LEAST_ONE,
    NON_NEGATIVE,
    POSITIVE,
    UNIT,
    Checked,
    SettingsError,
    within,
)
from tailor.change_budget import DEFAULT_CHANGES_PER_DAY
from tailor.durations import DAY, HOUR, DurationError, whole_windows

MIB = 2**20
# A year and a day of raw history per container; a billion days used to end in an
# OverflowError or a MemoryError deep in numpy instead of a settings error.
MAX_HISTORY_DAYS = 366.0

BatchSizing = Literal["mean", "percentile"]
ShortfallMode = Literal["vpa", "fixed"]


class ForecastSettingsError(SettingsError):
    """A setting outside the range the recommender can work with."""


def _spans_within_the_history_limit(settings: Any) -> list[tuple[bool, str]]:
    """Every span setting (…_days, …_hours, …_seconds) at most MAX_HISTORY_DAYS: a huge
    one ended in an OverflowError, or a hang."""
    units = {"_days": DAY, "_hours": HOUR, "_seconds": 1.0}
    checks = []
    for name in (f.name for f in dataclasses.fields(settings)):
        value = getattr(settings, name)
        unit = next((u for suffix, u in units.items() if name.endswith(suffix)), None)
        if unit is not None and isinstance(value, int | float) and not isinstance(value, bool):
            within = value * unit <= MAX_HISTORY_DAYS * DAY
            checks.append((within, f"{name} must span at most {MAX_HISTORY_DAYS:g} days"))
    return checks


class _Checked(Checked):
    """Forecast settings: checked as `Checked` is, and each span against the history limit."""

    ERROR = ForecastSettingsError

    def checks(self) -> list[tuple[bool, str]]:
        return super().checks() + _spans_within_the_history_limit(self)


@dataclass(frozen=True)
class ModelSettings(_Checked):
    """The forecast of block means (Holt-Winters, damped trend; see `holtwinters`).

    level_alphas: candidate level smoothing values; each container keeps the one (or
        persistence) whose recent errors cost the least margin.
    persistence_windows: windows averaged by the persistence forecast: batch jobs
        switch state and stay.
    trend_beta, trend_damping, season_gamma: the other smoothing parameters.
    season_threshold: autocorrelation at a cycle's length that detects the cycle.
    weekly_gain: how much more the weekly than the daily autocorrelation must be for
        the weekly cycle to be used.
    """

    GROUP = "model."
    level_alphas: tuple[float, ...] = field(
        default=(0.05, 0.2, 0.5, 0.9), metadata=within("(0, 1]")
    )
    persistence_windows: int = field(default=3, metadata=AT_LEAST_ONE)
    trend_beta: float = field(default=0.02, metadata=UNIT)
    trend_damping: float = field(default=0.9, metadata=UNIT)
    season_gamma: float = field(default=0.2, metadata=UNIT)
    season_threshold: float = field(default=0.3, metadata=within("(-1, 1)"))
    weekly_gain: float = 0.1


@dataclass(frozen=True)
class HysteresisSettings(_Checked):
    """When a block boundary moves a request (see `policy`): every change is a resize.

    decrease_threshold: a planned decrease must lower the request by this share ...
    min_decrease_share: ... and by this share of the recent peak (a small cut is not
        worth one of the day's few changes).
    increase_threshold: a planned increase waits until the need exceeds the request
        by this share (a shortfall still triggers a reaction).
    cover_blocks: a new level covers this many blocks ahead: a ramp costs one change.
    """

    GROUP = "hysteresis."
    decrease_threshold: float = field(default=0.15, metadata=within("[0, 1)"))
    min_decrease_share: float = field(default=0.05, metadata=within("[0, 1)"))
    increase_threshold: float = field(default=0.1, metadata=NON_NEGATIVE)
    cover_blocks: int = field(default=3, metadata=AT_LEAST_ONE)


@dataclass(frozen=True)
class ReactionSettings(_Checked):
    """Mid-block reactions: CPU raised between boundaries after a shortfall.

    react_after_windows: consecutive windows clearly above the request before a raise.
    react_margin: headroom over the recent usage in such a raise (and over what was
        seen, for a series too young for margins).
    react_min_fraction: "clearly above": by this share of the series' recent peak, so
        noise does not trigger resizes, a job starting does.
    reactions_per_day: mid-block raises a day the margins may need (the rest of the
        budget goes to planned changes).
    busy_lookback_hours: an idle block this soon after a busy window has its own
        margin: jobs come in bursts.
    """

    GROUP = "reactions."
    react_after_windows: int = field(default=2, metadata=AT_LEAST_ONE)
    react_margin: float = field(default=0.1, metadata=NON_NEGATIVE)
    react_min_fraction: float = field(default=0.1, metadata=NON_NEGATIVE)
    reactions_per_day: float = 2.0
    busy_lookback_hours: float = field(default=3.0, metadata=POSITIVE)


@dataclass(frozen=True)
class MemorySettings(_Checked):
    """The memory limit (= request): a limit too low kills the container (see `memory`).

    memory_recent_hours: the limit never drops below the peak of this recent past.
    memory_peak_days: how far back the peak a limit covers reaches (the upstream VPA
        keeps eight days of daily peaks).
    memory_state_quantile: quantile of a CPU state's memory that sizes the limit while
        the container is forecast in that state (1 = the peak).
    oom_tolerance_per_day: extra OOM kills a container-day that sizing memory per CPU
        state may cost in a replay of its past; above it the limit covers the peak.
    oom_worth_bytes: limit lowered on average worth one more kill a day (inf: none is).
    oom_bump_factor, oom_bump_min_bytes: an OOM kill raises the limit to
        max(limit x factor, (limit + min_bytes) x (1 + memory_margin)) at once, about
        the upstream VPA's bump with its margin ...
    oom_hold_hours: ... and no decrease follows for this long.
    """

    GROUP = "memory."
    memory_recent_hours: float = field(default=2.0, metadata=POSITIVE)
    memory_peak_days: float = field(default=7.0, metadata=POSITIVE)
    memory_state_quantile: float = field(default=1.0, metadata=within("[0.5, 1]"))
    oom_tolerance_per_day: float = field(default=0.02, metadata=NON_NEGATIVE)
    oom_worth_bytes: float = field(default=4096 * MIB, metadata=POSITIVE)
    oom_bump_factor: float = field(default=1.4, metadata=AT_LEAST_ONE)
    oom_bump_min_bytes: float = field(default=100 * MIB, metadata=NON_NEGATIVE)
    oom_hold_hours: float = field(default=24.0, metadata=NON_NEGATIVE)


@dataclass(frozen=True)
class LullSettings(_Checked):
    """How the `forecast` strategy follows the lulls of on/off containers (see `midblock`).

    follow: drop CPU mid-block to the idle need once a batch container has been
        idle for `after_windows` windows in a row ...
    min_saving: ... when that saves at least this share of its recent peak, and
        while the change budget still holds `reserve` changes for the restore.
    idle_quantile: quantile of the idle windows the idle request covers (plus
        the strategy's `react_margin`).
    target_floor: the job starts lulls will leave short come off the fleet target
        the margins may spend, down to this share of `target_cpu_shortfall`.
    """

    GROUP = "lulls."
    follow: bool = True
    after_windows: int = field(default=2, metadata=AT_LEAST_ONE)
    min_saving: float = field(default=0.5, metadata=UNIT)
    idle_quantile: float = field(default=0.9, metadata=within("(0, 1]"))
    target_floor: float = field(default=0.2, metadata=UNIT)
    reserve: int = field(default=1, metadata=AT_LEAST_ONE)


@dataclass(frozen=True)
class SpikeSettings(_Checked):
    """How the `forecast` strategy hands back a reaction once a serving burst is over
    (see `midblock`).

    release: return to the request from before a reaction once usage has stayed
        at or below it for `after_windows` windows in a row ...
    min_saving: ... when that saves at least this share of the recent peak, and
        while the change budget still holds `reserve` changes for the next reaction.
    last_change_after: with a single change left, a serving container's reaction
        waits for this many windows above the request: a short burst is let
        through rather than answered with a raise nothing could hand back.
    """

    GROUP = "spikes."
    release: bool = True
    after_windows: int = field(default=2, metadata=AT_LEAST_ONE)
    min_saving: float = field(default=0.3, metadata=UNIT)
    reserve: int = field(default=0, metadata=NON_NEGATIVE)
    last_change_after: int = field(default=6, metadata=AT_LEAST_ONE)


@dataclass(frozen=True)
class ForecastSettings(_Checked):
    """Settings of the `forecast` strategy and of `plan_forecast`.

    cpu_shortfall_mode: "vpa" targets `vpa_parity_factor` times the shortfall rate the
        upstream VPA's sizing would have had on the same recent past (see `parity`), at
        least `target_cpu_shortfall`: never riskier than the VPA it replaces; "fixed"
        targets `target_cpu_shortfall`.
    target_cpu_shortfall: share of windows, over all containers planned together, whose
        CPU usage may exceed the request; margins spend it where it saves the most cores.
    vpa_parity_factor: the share of the VPA's shortfall rate targeted in mode "vpa".
    max_container_shortfall: the largest shortfall rate any one container is planned for.
    batch_cpu_sizing: "mean" sizes batch (on/off) containers on the forecast mean, as
        the original VPA design asks; "percentile" treats them like serving containers.
    update_period_seconds: one schedule block: requests change at most once a block,
        apart from reactions to a shortfall or an OOM kill.
    horizon_seconds: how far the published schedule reaches.
    history_days: raw history kept per container (seasonality needs two cycles).
    residual_days: how much recent error history calibrates the margins.
    max_changes_per_day: the change budget, a hard cap on request changes in any 24 h
        (the user's dial: each change is a resize).
    reserved_changes: part of that cap a planned decrease leaves for a reaction.
    memory_margin: headroom over the memory peaks the limit covers.
    batch_peak_margin: a batch container's request never exceeds its recent peak times
        1 + this (its jobs run at their own ceiling).
    chunk_series: series planned together, one fleet for the shortfall allocation and
        one unit of parallel work: small enough for a chunk's arrays to stay in cache.
    min_cpu_cores, min_memory_bytes: smallest request ever proposed.
    model, hysteresis, reactions, memory, lulls, spikes: the rules' own knobs.
    """

    cpu_shortfall_mode: ShortfallMode = field(
        default="vpa", metadata=within(get_args(ShortfallMode))
    )
    target_cpu_shortfall: float = field(default=0.005, metadata=within("(0, 0.5)"))
    vpa_parity_factor: float = field(default=0.6, metadata=within("(0, 1]"))
    max_container_shortfall: float = field(
        default=0.1, metadata=within("[target_cpu_shortfall, 1)")
    )
    batch_cpu_sizing: BatchSizing = field(
        default="percentile", metadata=within(get_args(BatchSizing))
    )
    update_period_seconds: int = field(default=HOUR, metadata=within("[60, inf)"))
    horizon_seconds: int = field(default=DAY, metadata=within("[update_period_seconds, inf)"))
    history_days: float = field(default=14.0, metadata=within(f"[1, {MAX_HISTORY_DAYS:g}]"))
    residual_days: float = field(default=7.0, metadata=within("(0, history_days]"))
    max_changes_per_day: int = field(default=DEFAULT_CHANGES_PER_DAY, metadata=AT_LEAST_ONE)
    reserved_changes: int = field(default=1, metadata=within("[0, max_changes_per_day)"))
    memory_margin: float = field(default=0.2, metadata=NON_NEGATIVE)
    batch_peak_margin: float = field(default=0.03, metadata=NON_NEGATIVE)
    chunk_series: int = field(default=512, metadata=AT_LEAST_ONE)
    min_cpu_cores: float = field(default=0.005, metadata=POSITIVE)
    min_memory_bytes: float = field(default=64 * MIB, metadata=POSITIVE)
    model: ModelSettings = field(default_factory=ModelSettings)
    hysteresis: HysteresisSettings = field(default_factory=HysteresisSettings)
    reactions: ReactionSettings = field(default_factory=ReactionSettings)
    memory: MemorySettings = field(default_factory=MemorySettings)
    lulls: LullSettings = field(default_factory=LullSettings)
    spikes: SpikeSettings = field(default_factory=SpikeSettings)

    def with_budget(self, changes_per_day: int) -> ForecastSettings:
        """These settings at another change budget (the user's dial: `--changes-per-day`,
        a VPA's `kube-tailor.io/changes-per-day`); the reserve for reactions stays below it."""
        reserved = min(self.reserved_changes, changes_per_day - 1)
        return replace(self, max_changes_per_day=changes_per_day, reserved_changes=reserved)

    def blocks_per(self, seconds: float) -> int:
        """How many update periods fit in `seconds` (at least one)."""
        return max(1, round(seconds / self.update_period_seconds))

    def windows_per_block(self, step: int) -> int:
        """Sample windows per update period for a data step of `step` seconds: a period
        that is not a whole number of steps is an error, never silently rounded."""
        try:
            return whole_windows(self.update_period_seconds, step, "update_period_seconds")
        except DurationError as error:
            raise ForecastSettingsError(str(error)) from None
