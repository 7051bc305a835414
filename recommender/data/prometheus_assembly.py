"""The answers of one Prometheus load, gathered on grids and cut into the canonical
usage and events frames (pure: no I/O).

Window j of the usage is [T_j, T_j + step): its CPU average and memory peak are the
answers at grid point T_{j+1}, its requests and limits those in force at T_j
(`prometheus_usage` cuts the frame). The events are read from the grids first; each
grid is let go as soon as nothing more is read from it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.data import prometheus_frames as frames
from recommender.data.prometheus_grid import (
    Grid,
    SeriesIndex,
    drop_implausible,
    label_values,
    matrix_frame,
)
from recommender.data.prometheus_matrix import Matrix
from recommender.data.prometheus_samples import counter_reads
from recommender.data.prometheus_usage import shards, usage_frame
from recommender.data.promql import OWNER_LABELS, QueryNames
from recommender.data.schema import THROTTLED_COLUMN
from tailor.memory_pressure import MEMORY_PRESSURE, PressureRule

COUNTERS = ("cpu", THROTTLED_COLUMN)
SAMPLES = "_samples"  # suffix of a counter's raw samples (`prometheus_samples`)
GAUGES = {  # answer kind -> the usage columns its `resource` label splits it into
    "requests": {"cpu": "cpu_request", "memory": "memory_request"},
    "limits": {"cpu": "cpu_limit", "memory": "memory_limit"},
}
COUNTER_PARTS = ("at", "floor")  # of `counter_reads`, beside the counter itself
CADVISOR = (
    "memory",
    "memory_stalled",
    *(f"{c}{part}" for c in COUNTERS for part in ("", *(f"_{p}" for p in COUNTER_PARTS))),
)
SMALL = ("restarts", "oom")  # counts and 0/1 flags: float32 holds them exactly
Grids = dict[str, np.ndarray | None]  # kind -> containers x grid points; None: no answer


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
            kind: Grid(
                start,
                step,
                self.points,
                lowest=kind.endswith("_floor"),
                dtype=np.float32 if kind in SMALL else np.float64,
            )
            for kind in kinds
        }
        self.evicted = Grid(start, step, self.points, dtype=np.float32)
        self.state_rows: set[int] = set()  # containers some requests or restarts series names
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
            rows = self.index.rows(matrix, self.state)
            self.grids[kind].put(rows, matrix)
            if kind == "restarts":
                self._note_state(rows, matrix)
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
                picked = _series(matrix, chosen)
                self.grids[column].put(rows[chosen], picked)
                if kind == "requests":
                    self._note_state(rows[chosen], picked)

    def _note_state(self, rows: np.ndarray, matrix: Matrix) -> None:
        """Remember the containers of the series holding a number (`state_matches`)."""
        counts = matrix.counts
        held = counts > 0
        # a series holds a number if any of its samples is one
        numbers = (~np.isnan(matrix.values)).view(np.uint8)
        some = np.add.reduceat(numbers, matrix.offsets[:-1][held], dtype=np.int64) > 0
        self.state_rows.update(np.unique(rows[held][some]).tolist())

    def _pair(self, counter: str, kind: str, matrix: Matrix, first: int, last: int) -> None:
        """Once both halves of a counter's piece are in (the bare selector and its raw
        samples): the samples' times, resets and lows on the grid."""
        halves = self.halves.setdefault((counter, first), {})
        halves[kind] = matrix
        if len(halves) < 2:
            return
        del self.halves[(counter, first)]
        samples, presence = halves[counter + SAMPLES], halves[counter]
        reads = counter_reads(samples, presence, first, last, self.step, COUNTER_PARTS)
        rows = self.index.rows(samples, self.cadvisor)  # each read has the samples' series
        for part, read in reads.items():
            self.grids[f"{counter}_{part}"].put(rows, read)

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
        named = keys.iloc[sorted(self.state_rows)]
        return not pods.isdisjoint(zip(named["namespace"], named["pod"], strict=True))

    def take_grids(self) -> Grids:
        """Every grid's rows of the containers seen (None where no answer reached it), the
        answers holding them no more: the caller lets each go once it has read it."""
        count = len(self.index)
        grids, self.grids = self.grids, {}
        return {kind: grid.held(count) for kind, grid in grids.items()}


def _series(matrix: Matrix, chosen: np.ndarray) -> Matrix:
    """The series of `matrix` where `chosen`."""
    counts = matrix.counts[chosen]
    offsets = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    points = np.repeat(chosen, matrix.counts)
    labels = [label for label, keep in zip(matrix.labels, chosen, strict=True) if keep]
    return Matrix(labels, offsets, matrix.times[points], matrix.values[points])


def counter_windows(counter: np.ndarray, at: np.ndarray, floor: np.ndarray) -> np.ndarray:
    """Average cores of window j = [T_j, T_j+1) from the raw counter read at each grid
    point (its last sample at or before T, and that sample's time `at`), as column j + 1
    of the result (column 0 is NaN).

    Not rate(): rate()/increase() extrapolate to the window bounds and so disagree with
    the true average whenever samples are not exactly on them; (v2 - v1) / (t2 - t1)
    is exactly the average between the two samples. Windows where the counter was
    reset (a restart) or did not advance in time (a finished container still inside
    the lookback) are left out: their usage is unknown. A reset shows as a decrease,
    as a reset counted in the window (`floor` -inf) or as a sample below the start
    value (`floor`, the window's lowest sample): a restarted container whose new
    counter overtook the old value would otherwise pass for one that used only the
    difference. Computed a shard of containers at a time (small temporaries).
    """
    out = np.full(counter.shape, np.nan)
    for rows in shards(counter.shape[0]):
        value, time = counter[rows], at[rows]
        increase = value[:, 1:] - value[:, :-1]
        elapsed = time[:, 1:] - time[:, :-1]
        with np.errstate(invalid="ignore", divide="ignore"):
            valid = (increase >= 0) & (elapsed > 0) & (floor[rows, 1:] >= value[:, :-1])
            out[rows, 1:] = np.where(valid, increase / elapsed, np.nan)
    return out


def _windows(grids: Grids, counter: str) -> np.ndarray | None:
    """`counter_windows` of a counter's grids, taken out of `grids` (None: no answer)."""
    value, at, floor = (grids.pop(f"{counter}{p}") for p in ("", "_at", "_floor"))
    if value is None or at is None or floor is None:
        return None
    return counter_windows(value, at, floor)


def assemble(answers: Answers) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(usage, events) of the answers: the usage canonical and sorted, the events not yet
    validated. The answers' grids are consumed."""
    keys = answers.index.keys()
    step, start = answers.step, answers.start
    times = start + step * np.arange(answers.points, dtype=np.int64)
    grids = answers.take_grids()
    cpu, throttled = _windows(grids, "cpu"), _windows(grids, THROTTLED_COLUMN)
    memory = grids.pop("memory")
    if memory is None:
        memory = np.full((len(keys), times.size), np.nan)

    def where(offset: int):  # the key and the window start of a value, for warnings
        return lambda row, column: (keys.iloc[row], times[column] + offset)

    measured = [("cpu", "cpu", cpu), ("cpu", "cpu", throttled), ("memory", "memory", memory)]
    measured += [(r, "resource", grids[c]) for cs in GAUGES.values() for r, c in cs.items()]
    for resource, what, values in measured:
        if values is not None:
            drop_implausible(values, resource, what, where(0 if what == "resource" else -step))
    owners = answers.owner_frame()
    stalled = grids.pop("memory_stalled")
    episodes = pressure_episodes(keys, stalled, memory, times, answers.pressure)
    events = frames.combine_events(
        _oom_events(answers, keys, grids, memory),
        _eviction_events(answers, keys, memory, times),
        frames.event_frame(episodes, MEMORY_PRESSURE),
    )
    del stalled, grids["restarts"], grids["oom"]
    workloads = frames.with_workloads(keys, owners)["workload"].to_numpy(dtype=object)
    grids.update({"cpu": cpu, "memory": memory, THROTTLED_COLUMN: throttled})
    del cpu, memory, throttled  # `usage_frame` lets each go once its column is cut
    usage = usage_frame(keys, workloads, times, grids)
    return usage, frames.with_workloads(events, owners)


def _oom_events(
    answers: Answers, keys: pd.DataFrame, grids: Grids, memory: np.ndarray
) -> pd.DataFrame:
    """An OOM kill is a restart-count increase seen while the last termination is
    OOMKilled, stamped at the first grid point showing it (at most one step after the
    kill). It carries the memory limit then, or, without a limit, the peak working set
    of the window before it. Several kills within one step show as one jump of the
    restart counter and give one event (the counter cannot tell more)."""
    restarts, oom, limits = grids["restarts"], grids["oom"], grids["memory_limit"]
    if restarts is None or oom is None:  # no restart, or no OOMKilled reason shown
        return frames.event_frame(
            pd.DataFrame(columns=[*frames.KEYS, "time", "memory"]), "OOMKilled"
        )
    with np.errstate(invalid="ignore"):
        rose = np.round(restarts[:, 1:] - restarts[:, :-1]) > 0
        killed = rose & (oom[:, 1:] == 1)
    rows, column = np.nonzero(killed)
    column = column + 1
    jumps = keys.iloc[rows].reset_index(drop=True)
    jumps["time"] = answers.start + answers.step * column
    limit = np.full(rows.size, np.nan) if limits is None else limits[rows, column]
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
    stalled: np.ndarray | None,
    memory: np.ndarray,
    times: np.ndarray,
    rule: PressureRule | None = None,
) -> pd.DataFrame:
    """The onsets of sustained memory pressure (`tailor.memory_pressure`'s rule, its
    defaults) as event rows: where the stalled share of the windows spanning the rule's
    window (at least one) first averages its threshold, stamped at the end of the last
    of them, with the peak working set over them (the models bump it as an OOM kill's).

    Column j + 1 of `stalled` and `memory` is window j, as for every cAdvisor answer; a
    window without a reading breaks an episode (its share is unknown, not zero); None
    is no reading at all (no PSI).
    """
    rule = rule or PressureRule()
    step = int(times[1] - times[0]) if times.size > 1 else rule.window_seconds
    span = rule.windows_for(step)
    columns = ["namespace", "pod", "container", "time", "memory"]
    if stalled is None or stalled.shape[1] <= span:
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
