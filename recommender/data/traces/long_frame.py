"""What the trace loaders share: the trace's sample period, naming unreadable raw files,
and one way to assemble and validate the long frame, so every dataset comes out alike."""

from __future__ import annotations

import gzip
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd

from recommender.data.schema import STRING_DTYPE, DataFormatError, validate_usage

TRACE_STEP = 300  # seconds between samples in all three traces
GIB = 2**30


@contextmanager
def reading(source: str) -> Iterator[None]:
    """A raw file pandas, gzip or tarfile cannot read becomes a DataFormatError naming it;
    their own errors (`No columns to parse from file`) named no file, and some were tracebacks."""
    try:
        yield
    except DataFormatError:
        raise
    except (ValueError, EOFError, zlib.error, gzip.BadGzipFile, tarfile.TarError) as error:
        raise DataFormatError(source, f"cannot read it: {error}") from None


def _repeat_labels(labels: list[str], codes: np.ndarray) -> pd.Series:
    """labels[codes] as a string column, built in Arrow (no million Python str objects);
    pyarrow imported here, so that a command that loads no trace never imports it."""
    import pyarrow as pa

    return pd.Series(pd.array(pa.array(labels).take(pa.array(codes)), dtype=STRING_DTYPE))


def check_limit(limit: int | None) -> None:
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 series, not {limit}")


def series_frame(
    namespace: str,
    pods: list[str],
    workloads: list[str],
    lengths: np.ndarray,
    columns: dict[str, np.ndarray],
    cleaning: dict[str, int],
    source: str,
) -> pd.DataFrame:
    """Assemble a long frame from per-series arrays laid end to end, and validate it."""
    codes = np.repeat(np.arange(len(pods)), lengths)
    frame = pd.DataFrame(
        {
            "timestamp": pd.to_datetime(columns["seconds"], unit="s", utc=True),
            "namespace": namespace,
            "workload": _repeat_labels(workloads, codes),
            "pod": _repeat_labels(pods, codes),
            "container": "main",
            **{name: values for name, values in columns.items() if name != "seconds"},
        }
    )
    result = validate_usage(frame, source)
    result.attrs["cleaning"] = cleaning
    return result
