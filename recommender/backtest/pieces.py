"""Replaying long series as many short ones: cold starts drawn from any trace.

A strategy's first hours with a container are judged apart from its steady
state by cutting a long trace (the Bitbrains tuning months, say) into pieces of
a day that all start together: a cold-start set made of the same workloads, so
young-container behaviour can be tuned without touching a reported set. Cut
into days, Google 2011 gives back its one-day files. Each piece becomes its own container
(`<pod>-p<k>`, `<workload>-p<k>`); OOM / eviction events move with the piece
they fall in.
"""

from __future__ import annotations

import pandas as pd

from recommender.backtest.settings import BacktestInputError
from recommender.data.arrays import SamplePeriodError, infer_step
from recommender.data.schema import SERIES_COLUMNS
from recommender.data.timestamps import unix_seconds
from tailor.durations import DurationError, whole_windows

SERIES = list(SERIES_COLUMNS)


def _pieces(
    frame: pd.DataFrame, first: pd.Series, origin: pd.Timestamp, span_seconds: int
) -> tuple[pd.Series, pd.Series]:
    """Piece number per row and the shift that moves its piece's start to `origin`."""
    elapsed = (frame["timestamp"] - first).dt.total_seconds()
    piece = (elapsed // span_seconds).astype("int64")
    shift = (first - origin) + pd.to_timedelta(piece * span_seconds, unit="s")
    return piece, shift


def _renamed(frame: pd.DataFrame, piece: pd.Series, shift: pd.Series) -> pd.DataFrame:
    out = frame.copy()
    out["timestamp"] = frame["timestamp"] - shift
    suffix = "-p" + piece.astype(str)
    out["pod"] = frame["pod"] + suffix
    if "workload" in frame.columns:
        out["workload"] = frame["workload"].fillna(frame["pod"]) + suffix
    return out


def _check_span_on_grid(usage: pd.DataFrame, span_seconds: int) -> None:
    """Pieces must hold whole windows (7-minute pieces of 5-minute data alternate 1 and 2),
    and two at least: a piece of one sample was reported as "a single timestamp"."""
    seconds = unix_seconds(usage["timestamp"])
    codes = usage.groupby(SERIES, sort=False).ngroup().to_numpy()
    try:
        step = infer_step(seconds, codes)
    except SamplePeriodError:
        return  # a single sample per series: the replay reports it
    try:
        windows = whole_windows(span_seconds, step, "the split span")
    except DurationError as error:
        raise BacktestInputError(str(error)) from None
    if windows < 2:
        raise BacktestInputError(
            f"the split span ({span_seconds} s) must hold at least two samples of the "
            f"data's {step} s sample period"
        )


def split_series(
    usage: pd.DataFrame, events: pd.DataFrame, span_seconds: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Cut every series into pieces of `span_seconds`, all moved to start together.

    A piece keeps its samples' offsets from the start of its series (shifted by
    whole spans), so when the span is a multiple of the sampling step every
    piece lands on the same time grid. Events before their series' first sample
    or of series without usage are dropped, as the replay would ignore them.
    """
    if span_seconds <= 0:
        raise BacktestInputError("the split span must be positive")
    if usage.empty:
        return usage, events
    _check_span_on_grid(usage, span_seconds)
    starts = usage.groupby(SERIES, sort=False)["timestamp"].min().rename("first")
    first = usage.join(starts, on=SERIES)["first"]
    origin = starts.min()
    piece, shift = _pieces(usage, first, origin, span_seconds)
    pieces = _renamed(usage, piece, shift)
    if events.empty:
        return pieces, events
    known = events.join(starts, on=SERIES, how="inner")
    known = known[known["timestamp"] >= known["first"]]
    event_piece, event_shift = _pieces(known, known["first"], origin, span_seconds)
    return pieces, _renamed(known.drop(columns="first"), event_piece, event_shift)
