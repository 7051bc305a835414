"""The answers of one Prometheus load, gathered on grids and cut into the canonical
usage and events frames (pure: no I/O).

Window j of the usage is [T_j, T_j + step): its CPU average and memory peak are the
answers at grid point T_{j+1}, its requests and limits those in force at T_j. The
usage's key columns are categorical (one code per row, the names once), its rows
sorted by namespace, workload, pod, container and time, as `validate_usage` sorts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.data import prometheus_frames as frames
from recommender.data.columnar import shared_categories
from recommender.data.prometheus_grid import (
    Grid,
    SeriesIndex,
    drop_implausible,
    label_values,
    matrix_frame,
)
from recommender.data.prometheus_matrix import Matrix
from recommender.data.prometheus_samples import counter_reads
from recommender.data.prometheus_settings import PrometheusSourceError
from recommender.data.promql import OWNER_LABELS, QueryNames
from recommender.data.schema import (
    KEY_LABELS,
    RESOURCE_COLUMNS,
    THROTTLED_COLUMN,
    USAGE_COLUMNS,
    DataFormatError,
    validate_usage,
)
from recommender.data.timestamps import TIMESTAMP_DTYPE
from tailor.memory_pressure import MEMORY_PRESSURE, PressureRule

COUNTERS = ("cpu", THROTTLED_COLUMN)
SAMPLES = "_samples"  # suffix of a counter's raw samples (`prometheus_samples`)
GAUGES = {  # answer kind -> the usage columns its `resource` label splits it into
    "requests": {"cpu": "cpu_request", "memory": "memory_request"},
    "limits": {"cpu": "cpu_limit", "memory": "memory_limit"},
}
CADVISOR = (
    "memory",
    "memory_stalled",
    *(f"{c}{part}" for c in COUNTERS for part in ("", "_at", "_resets", "_low")),
)


class Answers:
    """Everything the queries of one load answered, placed on grids as it arrives."""

    def __init__(
        self,
        start: int,
        end: int,
        step: int,
        names: QueryNames,
        pressure: PressureRule | None = None,
    ) -> None:
        self.start, self.end, self.step = start, end, step
        self.pressure = pressure or PressureRule()  # what a sustained-pressure episode is
        self.points = (end - start) // step + 1  # grid points start .. end
        self.index = SeriesIndex()  # containers
        self.pods = SeriesIndex()  # (namespace, pod, "")
        cadvisor, state = names.labels, names.state_labels
        self.cadvisor = (cadvisor.namespace, cadvisor.pod, cadvisor.container)
        self.state = (state.namespace, state.pod, state.container)
        self.pod_labels = (state.namespace, state.pod, "")
        kinds = [*CADVISOR, "restarts", "oom", *(c for g in GAUGES.values() for c in g.values())]
        self.grids = {
            kind: Grid(start, step, self.points, lowest=kind.endswith("_low")) for kind in kinds
        }
        self.evicted = Grid(start, step, self.points)
        self.owners: list[pd.DataFrame] = []
        self.halves: dict[tuple[str, int], dict[str, Matrix]] = {}  # counter pieces, by start

    def add(self, kind: str, matrix: Matrix, first: int = 0, last: int = 0) -> None:
        """Place the answer of a query of `kind` on the grid points first .. last."""
        counter = kind.removesuffix(SAMPLES)
        if counter in COUNTERS:
            if kind == counter:
                self.grids[kind].put(self.index.rows(matrix, self.cadvisor), matrix)
            self._pair(counter, kind, matrix, first, last)
        elif kind in CADVISOR:
            self.grids[kind].put(self.index.rows(matrix, self.cadvisor), matrix)
        elif kind in ("restarts", "oom"):
            self.grids[kind].put(self.index.rows(matrix, self.state), matrix)
        elif kind == "evicted":
            self.evicted.put(self.pods.rows(matrix, self.pod_labels), matrix)
        elif kind == "owners":
            columns = {"namespace": self.state[0], "pod": self.state[1]}
            self.owners.append(matrix_frame(matrix, {**columns, **{n: n for n in OWNER_LABELS}}))
        else:
            rows = self.index.rows(matrix, self.state)
            resources = np.array(label_values(matrix, "resource"), dtype=object)
            for resource, column in GAUGES[kind].items():
                chosen = resources == resource
                self.grids[column].put(rows[chosen], _series(matrix, chosen))

    def _pair(self, counter: str, kind: str, matrix: Matrix, first: int, last: int) -> None:
        """Once both halves of a counter's piece are in (the bare selector and its raw
        samples): the samples' times, resets and lows on the grid."""
        halves = self.halves.setdefault((counter, first), {})
        halves[kind] = matrix
        if len(halves) < 2:
            return
        del self.halves[(counter, first)]
        reads = counter_reads(halves[counter + SAMPLES], halves[counter], first, last, self.step)
        for part, read in reads.items():
            self.grids[f"{counter}_{part}"].put(self.index.rows(read, self.cadvisor), read)

    def owner_frame(self) -> pd.DataFrame:
        columns = ["namespace", "pod", *OWNER_LABELS, "time", "value"]
        return pd.concat(self.owners or [pd.DataFrame(columns=columns)], ignore_index=True)

    def state_matches(self, usage: pd.DataFrame) -> bool:
        """Whether any kube-state-metrics series names a pod the usage has. A scrape without
        honor_labels still yields series, keyed by the scrape target's own namespace and pod."""
        pods = set(usage[["namespace", "pod"]].drop_duplicates().itertuples(index=False))
        owners = self.owner_frame()
        if not pods.isdisjoint(zip(owners["namespace"], owners["pod"], strict=True)):
            return True
        keys = self.index.keys()
        count = len(keys)
        for kind in ("requests", "restarts"):
            grids = [self.grids[c] for c in GAUGES.get(kind, {}).values()] or [self.grids[kind]]
            seen = np.zeros(count, bool)
            for grid in grids:
                seen |= ~np.isnan(grid.rows(count)).all(axis=1)
            named = keys[seen]
            if not pods.isdisjoint(zip(named["namespace"], named["pod"], strict=True)):
                return True
        return False


def _series(matrix: Matrix, chosen: np.ndarray) -> Matrix:
    """The series of `matrix` where `chosen`."""
    counts = matrix.counts[chosen]
    offsets = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    points = np.repeat(chosen, matrix.counts)
    labels = [label for label, keep in zip(matrix.labels, chosen, strict=True) if keep]
    return Matrix(labels, offsets, matrix.times[points], matrix.values[points])


def counter_windows(
    counter: np.ndarray, at: np.ndarray, resets: np.ndarray, low: np.ndarray
) -> np.ndarray:
    """Average cores of window j = [T_j, T_j+1) from the raw counter read at each grid
    point (its last sample at or before T, and that sample's time `at`), as column j + 1
    of the result (column 0 is NaN).

    Not rate(): rate()/increase() extrapolate to the window bounds and so disagree with
    the true average whenever samples are not exactly on them; (v2 - v1) / (t2 - t1)
    is exactly the average between the two samples. Windows where the counter was
    reset (a restart) or did not advance in time (a finished container still inside
    the lookback) are left out: their usage is unknown. A reset shows as a decrease,
    as `resets` (counted up to the window's end) or as a sample below the start value
    in `low`: a restarted container whose new counter overtook the old value would
    otherwise pass for one that used only the difference.
    """
    out = np.full(counter.shape, np.nan)
    increase = counter[:, 1:] - counter[:, :-1]
    elapsed = at[:, 1:] - at[:, :-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        valid = (increase >= 0) & (elapsed > 0) & (resets[:, 1:] == 0)
        valid &= low[:, 1:] >= counter[:, :-1]
        out[:, 1:] = np.where(valid, increase / elapsed, np.nan)
    return out


def assemble(answers: Answers) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(usage, events) of the answers: the usage canonical and sorted, the events not yet
    validated."""
    count = len(answers.index)
    keys = answers.index.keys()
    step, start = answers.step, answers.start
    times = start + step * np.arange(answers.points, dtype=np.int64)
    grids = {kind: grid.rows(count) for kind, grid in answers.grids.items()}
    cpu, throttled = (
        counter_windows(*(grids.pop(f"{c}{part}") for part in ("", "_at", "_resets", "_low")))
        for c in COUNTERS
    )
    memory = grids["memory"]

    def where(offset: int):  # the key and the window start of a value, for warnings
        return lambda row, column: (keys.iloc[row], times[column] + offset)

    drop_implausible(cpu, "cpu", "cpu", where(-step))
    drop_implausible(throttled, "cpu", "cpu", where(-step))
    drop_implausible(memory, "memory", "memory", where(-step))
    for columns in GAUGES.values():
        for resource, column in columns.items():
            drop_implausible(grids[column], resource, "resource", where(0))
    owners = answers.owner_frame()
    workloads = frames.with_workloads(keys, owners)["workload"].to_numpy(dtype=object)
    usage = _usage(keys, workloads, times, cpu, memory, throttled, grids)
    events = frames.combine_events(
        _oom_events(answers, keys, grids, memory),
        _eviction_events(answers, keys, memory, times),
        frames.event_frame(
            pressure_episodes(keys, grids["memory_stalled"], memory, times, answers.pressure),
            MEMORY_PRESSURE,
        ),
    )
    return usage, frames.with_workloads(events, owners)


def _usage(
    keys: pd.DataFrame,
    workloads: np.ndarray,
    times: np.ndarray,
    cpu: np.ndarray,
    memory: np.ndarray,
    throttled: np.ndarray,
    gauges: dict[str, np.ndarray],
) -> pd.DataFrame:
    """Rows where the window has CPU, and memory unless the container has no memory at
    all (a window missing one of the two is left out rather than half filled)."""
    labels = keys.assign(workload=workloads)
    _check_labels(labels, times[0])
    order = labels.sort_values(list(KEY_LABELS), kind="stable").index.to_numpy()
    measured = ~np.isnan(memory).all(axis=1)
    windows = slice(1, None)
    kept = ~np.isnan(cpu[:, windows]) & (~np.isnan(memory[:, windows]) | ~measured[:, None])
    kept = kept[order]
    per_row = kept.sum(axis=1)
    columns: dict[str, object] = {
        "timestamp": pd.DatetimeIndex(
            np.broadcast_to(times[:-1], kept.shape)[kept].astype("datetime64[s]")
        )
        .tz_localize("UTC")
        .astype(TIMESTAMP_DTYPE),
    }
    names = shared_categories([labels[name] for name in KEY_LABELS])
    for name in KEY_LABELS:
        codes = names.categories.get_indexer(labels[name].to_numpy(dtype=object)[order])
        columns[name] = pd.Categorical.from_codes(np.repeat(codes, per_row), dtype=names)
    columns["cpu"] = cpu[order, windows][kept]
    columns["memory"] = memory[order, windows][kept]
    for name in RESOURCE_COLUMNS:  # in force at the window's start
        columns[name] = gauges[name][order, :-1][kept]
    columns[THROTTLED_COLUMN] = throttled[order, windows][kept]
    return pd.DataFrame(columns)[list(USAGE_COLUMNS)]


def _check_labels(labels: pd.DataFrame, first: int) -> None:
    """The keys' rules of `validate_usage` (non-empty, no whitespace), once per series."""
    if labels.empty:
        return
    probe = labels.assign(timestamp=int(first), cpu=0.0, memory=np.nan)
    try:
        validate_usage(probe, "Prometheus")
    except DataFormatError as error:
        raise PrometheusSourceError(f"unusable history: {error}") from error


def _oom_events(
    answers: Answers, keys: pd.DataFrame, grids: dict[str, np.ndarray], memory: np.ndarray
) -> pd.DataFrame:
    """An OOM kill is a restart-count increase seen while the last termination is
    OOMKilled, stamped at the first grid point showing it (at most one step after the
    kill). It carries the memory limit then, or, without a limit, the peak working set
    of the window before it. Several kills within one step show as one jump of the
    restart counter and give one event (the counter cannot tell more)."""
    restarts = grids["restarts"]
    with np.errstate(invalid="ignore"):
        rose = np.round(restarts[:, 1:] - restarts[:, :-1]) > 0
        killed = rose & (grids["oom"][:, 1:] == 1)
    rows, column = np.nonzero(killed)
    column = column + 1
    jumps = keys.iloc[rows].reset_index(drop=True)
    jumps["time"] = answers.start + answers.step * column
    limit = grids["memory_limit"][rows, column]
    jumps["memory"] = np.where(np.isnan(limit), memory[rows, column], limit)
    return frames.event_frame(jumps, "OOMKilled")


def _eviction_events(
    answers: Answers, keys: pd.DataFrame, memory: np.ndarray, times: np.ndarray
) -> pd.DataFrame:
    """`frames.eviction_events` on the pods whose Evicted reason ever showed 1."""
    pods = answers.pods.keys()
    reasons = answers.evicted.rows(len(pods))
    shown = np.flatnonzero((reasons == 1).any(axis=1))
    if shown.size == 0:
        return frames.event_frame(pd.DataFrame(columns=[*frames.KEYS, "time", "memory"]), "Evicted")
    present = ~np.isnan(reasons[shown])
    row_of, column = np.nonzero(present)
    evicted = pods.iloc[shown[row_of]][["namespace", "pod"]].reset_index(drop=True)
    evicted["time"] = times[column]
    evicted["value"] = reasons[shown][present]
    chosen = pd.MultiIndex.from_frame(keys[["namespace", "pod"]]).isin(
        pd.MultiIndex.from_frame(evicted[["namespace", "pod"]])
    )
    rows = np.flatnonzero(chosen)
    peaks = memory[rows]
    measured = ~np.isnan(peaks)
    row_of, column = np.nonzero(measured)
    seen = keys.iloc[rows[row_of]].reset_index(drop=True)
    seen["time"] = times[column] - answers.step
    seen["memory"] = peaks[measured]
    return frames.eviction_events(evicted, seen, answers.start, answers.step)


def pressure_episodes(
    keys: pd.DataFrame,
    stalled: np.ndarray,
    memory: np.ndarray,
    times: np.ndarray,
    rule: PressureRule | None = None,
) -> pd.DataFrame:
    """The onsets of sustained memory pressure (`tailor.memory_pressure`'s rule, its
    defaults) as event rows: where the stalled share of the windows spanning the rule's
    window (at least one) first averages its threshold, stamped at the end of the last
    of them, with the peak working set over them (the models bump it as an OOM kill's).

    Column j + 1 of `stalled` and `memory` is window j, as for every cAdvisor answer; a
    window without a reading breaks an episode (its share is unknown, not zero).
    """
    rule = rule or PressureRule()
    step = int(times[1] - times[0]) if times.size > 1 else rule.window_seconds
    span = rule.windows_for(step)
    columns = ["namespace", "pod", "container", "time", "memory"]
    if stalled.shape[1] <= span:
        return pd.DataFrame(columns=columns)
    known = ~np.isnan(stalled)
    shares = np.where(known, stalled, 0.0)
    sums = np.cumsum(np.pad(shares, ((0, 0), (1, 0))), axis=1)
    counts = np.cumsum(np.pad(known, ((0, 0), (1, 0))), axis=1)
    ends = np.arange(span, stalled.shape[1] + 1)  # window [end - span, end) of columns
    whole = (counts[:, ends] - counts[:, ends - span]) == span
    average = (sums[:, ends] - sums[:, ends - span]) / span
    sustained = whole & (average >= rule.stalled_share)
    onset = sustained & ~np.pad(sustained, ((0, 0), (1, 0)))[:, :-1]
    rows, at = np.nonzero(onset)
    last = ends[at] - 1  # the column of the last window of the span
    found = keys.iloc[rows][["namespace", "pod", "container"]].reset_index(drop=True)
    found["time"] = times[last]
    peaks = np.full(rows.size, np.nan)
    for i, (row, column) in enumerate(zip(rows, last, strict=True)):
        seen = memory[row, column - span + 1 : column + 1]
        peaks[i] = np.nanmax(seen) if (~np.isnan(seen)).any() else np.nan
    found["memory"] = peaks
    return found[columns][~np.isnan(peaks)]
