"""How often `tailor follow` may resize a pod: its change budget, kept on the pod (pure).

Every in-place resize is an API write and a kubelet action; how many a day a pod takes is
the user's dial (`--changes-per-day`, or its VPA's `kube-tailor.io/changes-per-day`). The
forecaster plans within the same budget, but the updater is the one that writes, so it
counts its own resizes and never exceeds it, whatever the schedule asks. The count lives
on the pod (`RESIZED_AT`: the UNIX seconds of the updater's resizes in the last day), not
in the process: a restarted updater, or a second replica after a leader change, knows
what was already spent. The rule itself is the strategy's (`tailor.change_budget`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import numpy as np

from tailor.change_budget import ChangeBudget
from tailor.durations import DAY

#: the pod annotation holding the UNIX seconds of the updater's resizes of the last day
RESIZED_AT = "kube-tailor.io/resized-at"


def resized_at(pod: Mapping[str, object]) -> list[float]:
    """The UNIX seconds of the updater's resizes recorded on `pod` (an unreadable entry,
    written by someone else, is skipped: it cannot be told from a resize we made)."""
    metadata = pod.get("metadata") or {}
    annotations = (metadata.get("annotations") if isinstance(metadata, dict) else None) or {}
    text = str(annotations.get(RESIZED_AT, ""))
    times = []
    for part in text.replace(",", " ").split():
        try:
            value = float(part)
        except ValueError:
            continue
        if math.isfinite(value):
            times.append(value)
    return sorted(times)


def _seconds(now: datetime) -> float:
    return now.astimezone(UTC).timestamp()


def refusal(times: Sequence[float], now: datetime, cap: int) -> str | None:
    """Why a resize must wait (None: the budget allows one now); says when it frees up."""
    at = _seconds(now)
    budget = ChangeBudget.after([np.asarray(times, dtype=np.float64)], cap)
    if budget.left(at)[0] > 0:
        return None
    # room grows only when a past resize leaves one of the trailing spans
    leaving = sorted(time + span * DAY for time in times for span in budget.spans)
    free = next((t for t in leaving if t > at and budget.left(t + 1e-3)[0] > 0), math.inf)
    when = datetime.fromtimestamp(free, UTC).strftime("%H:%M UTC") if math.isfinite(free) else "?"
    spent = sum(1 for time in times if time > at - DAY)
    return f"change budget spent ({spent} resizes in the last 24 h, {cap} a day); next at {when}"


def recorded(times: Sequence[float], now: datetime) -> str:
    """The annotation's value after a resize at `now`: the last day's resizes and this one."""
    at = _seconds(now)
    kept = [time for time in times if time > at - DAY] + [at]
    return " ".join(f"{time:.0f}" for time in sorted(kept))
