"""How many request changes each container may still make: a cap per trailing day.

How many changes a day a container may take is the user's dial (the strategy's
`max_changes_per_day`, `--changes-per-day`, a VPA's `kube-tailor.io/changes-per-day`).
The strategy that plans within it (`forecast`, and the baselines when held to the same
constraint) and `tailor follow`, which never resizes a pod more often, share this rule:
the times of each container's last changes, checked over trailing windows: over 24 h,
and over shorter spans at the same daily rate, so that the part-days at the start or
end of a series stay near that rate too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tailor.durations import DAY

#: the default budget, chosen on the tuning months' per-budget frontier: hourly changes
#: buy back most of the slack a daily cap leaves, and each is one in-place resize
#: (figures and the API writes it costs: docs/results/frontiers.md#the-default)
DEFAULT_CHANGES_PER_DAY = 24
DEFAULT_SPANS = (2 / 3, 1.0)  # trailing windows, in days, the cap is checked over
#: a VPA's own budget (changes per day) for its containers, over the flags'
CHANGES_PER_DAY = "kube-tailor.io/changes-per-day"


class BudgetError(ValueError):
    """A changes-per-day value that is not a whole number of at least one."""


def changes_per_day(text: str) -> int:
    """A budget as an annotation writes it: a whole number of at least 1."""
    try:
        value = int(text.strip())
    except ValueError:
        raise BudgetError(f"{CHANGES_PER_DAY}: {text!r} is not a whole number") from None
    if value < 1:
        raise BudgetError(f"{CHANGES_PER_DAY}: must be at least 1, got {value}")
    return value


class ChangeBudget:
    """Times of the last `cap` changes per container (UNIX seconds, -inf = none)."""

    def __init__(self, containers: int, cap: int, spans: Sequence[float] = DEFAULT_SPANS) -> None:
        if cap < 1:
            raise ValueError("a change budget needs a cap of at least one change a day")
        if not spans or any(not 0.0 < span <= 1.0 for span in spans):
            raise ValueError("the spans the cap is checked over must be in (0, 1] day")
        self.cap = cap
        self.spans = tuple(spans)
        self.times = np.full((containers, cap), -np.inf)

    def _room(self, times: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Changes still allowed at each of `ends` (n, k) given the change `times` (n, c):
        at most cap x span changes in every trailing span (n, k)."""
        room = np.full(ends.shape, self.cap, dtype=np.int64)
        for span in self.spans:
            # at least one: a cap of 1 a day allowed none at all in the 16 h span
            allowed = max(1, int(self.cap * span + 1e-9))
            start = ends[:, :, None] - span * DAY
            inside = (times[:, None, :] > start) & (times[:, None, :] <= ends[:, :, None])
            room = np.minimum(room, allowed - inside.sum(axis=2))
        return room

    @classmethod
    def after(
        cls, changes: Sequence[np.ndarray], cap: int, spans: Sequence[float] = DEFAULT_SPANS
    ) -> ChangeBudget:
        """A budget that already counts the changes made so far: one array of UNIX
        seconds per container (the last `cap` of each are kept)."""
        budget = cls(len(changes), cap, spans)
        for row, times in enumerate(changes):
            last = np.sort(np.asarray(times, dtype=np.float64))[-cap:]
            budget.times[row, : last.size] = last
        return budget

    def left(self, now: float) -> np.ndarray:
        """Changes still allowed at `now` per container (int, may be negative after
        changes that had to happen anyway, such as the bump after an OOM kill)."""
        return self._room(self.times, np.full((self.times.shape[0], 1), now))[:, 0]

    def record(self, changed: np.ndarray, before: np.ndarray, now: float) -> None:
        """Containers `changed` (bool) resized at `now`; `before` is the CPU request they
        had (NaN: none yet, so this was their first setting, not a change)."""
        rows = np.flatnonzero(changed & ~np.isnan(before))
        if rows.size == 0:
            return
        oldest = np.argmin(self.times[rows], axis=1)
        self.times[rows, oldest] = now
