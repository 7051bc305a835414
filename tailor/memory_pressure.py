"""When a container's memory pressure calls for more memory now, and how much (pure).

The kernel's pressure stall information (PSI) counts the time a cgroup's tasks
waited for memory: `some` (at least one task stalled; cAdvisor's
`container_pressure_memory_waiting_seconds_total`) and `full` (every non-idle task
stalled at once; `container_pressure_memory_stalled_seconds_total`). A container whose
working set nears its memory limit spends more and more time in reclaim before the OOM
killer ends it: the `full` share is the time it made no progress at all.

The rule: a container is under sustained memory pressure when its `full` (stalled)
share, averaged over `window`, reaches `stalled_share`; an average over a window rather
than one reading, as the kernel's own avg10 / avg60 / avg300 and systemd-oomd's
`ManagedOOMMemoryPressureDurationSec` use. It is then given the memory an OOM kill would
have given it, at once: upstream's OOM bump, max(used x 1.2, used + 100 MiB), where
`used` is the larger of its memory request and its working set. The updater applies it
in place (up only, within the VPA's maxAllowed); the recommender reads the same episode
back as an OOM-like sample, so its next recommendation does not take the memory away.
Both sides take the rule from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

MiB = 2**20
# upstream's recommender flags --oom-bump-up-ratio and --oom-min-bump-up-bytes
OOM_BUMP_RATIO = 1.2
OOM_MIN_BUMP = 100 * MiB
STALLED_SHARE = 0.10  # 10 % of wall time with every task stalled on memory
WINDOW = timedelta(minutes=2)
#: the events-table reason of a sustained-pressure episode (an OOM-like sample)
MEMORY_PRESSURE = "MemoryPressure"


@dataclass(frozen=True)
class PressureReading:
    """One container's memory pressure over the rule's window, as Prometheus answers it."""

    stalled_share: float  # the `full` share of wall time, averaged over the window
    working_set: float  # its peak working set over the window, bytes (NaN: unknown)


class PressureRuleError(ValueError):
    """A threshold, window or bump the rule cannot use."""


@dataclass(frozen=True)
class PressureRule:
    """The threshold, the window it is averaged over, and the bump (upstream's OOM one)."""

    stalled_share: float = STALLED_SHARE
    window: timedelta = WINDOW
    bump_ratio: float = OOM_BUMP_RATIO
    min_bump: float = OOM_MIN_BUMP

    def __post_init__(self) -> None:
        if not (0 < self.stalled_share <= 1):
            raise PressureRuleError(
                f"the stalled share must be above 0 and at most 1 (a fraction of wall time), "
                f"got {self.stalled_share}"
            )
        if self.window.total_seconds() < 1:
            raise PressureRuleError(f"the window must be at least 1 s, got {self.window}")
        if not (math.isfinite(self.bump_ratio) and self.bump_ratio >= 1):
            raise PressureRuleError(f"the bump ratio must be at least 1, got {self.bump_ratio}")
        if not (math.isfinite(self.min_bump) and self.min_bump >= 0):
            raise PressureRuleError(f"the minimum bump must be >= 0 bytes, got {self.min_bump}")

    @property
    def window_seconds(self) -> int:
        return math.ceil(self.window.total_seconds())

    def sustained(self, stalled_share: float) -> bool:
        """Whether an average `full` share over the window calls for memory now (NaN: no)."""
        return bool(stalled_share >= self.stalled_share)

    def bumped(self, used: float) -> float:
        """The memory an OOM kill at `used` bytes would call for (upstream's OOM bump)."""
        return max(used * self.bump_ratio, used + self.min_bump)

    def raised_request(self, request: float | None, working_set: float) -> float:
        """The memory request a container under sustained pressure gets: the bump of the
        larger of its request and its working set, so never below its request."""
        used = max(request or 0.0, working_set)
        return self.bumped(used)

    def windows_for(self, step_seconds: int) -> int:
        """How many consecutive windows of `step_seconds` the rule's window spans (>= 1)."""
        if step_seconds <= 0:
            raise PressureRuleError(f"the step must be positive, got {step_seconds} s")
        return max(1, math.ceil(self.window_seconds / step_seconds))
