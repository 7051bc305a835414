"""The upstream VPA recommender model for many containers at once.

Histograms belong to aggregates (namespace, workload, container: all pods of a
workload's container merge, as upstream); the ordering rule, memory-peak
intervals and OOM bookkeeping belong to series (one pod's container). All state
is numpy arrays indexed by aggregate or series, so a batch of millions of
samples costs a handful of array passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from recommender.vpa.buckets import cpu_buckets, memory_buckets
from recommender.vpa.checkpoint_codec import CheckpointError, load_status
from recommender.vpa.checkpoint_export import CheckpointExport, HistogramColumns
from recommender.vpa.estimators import (
    VpaRecommendation,
    confidence_days,
    estimate_bounds,
    pod_minimum_share,
    to_amount,
)
from recommender.vpa.histogram import DecayingHistograms, percentile_values
from recommender.vpa.ingest import (
    Chunk,
    Segments,
    VpaInputError,
    accept_in_order,
    checked_amounts,
    checked_chunk,
    checked_indices,
    checked_times,
    group_by_series,
    kept_rows,
)
from recommender.vpa.peaks import MemoryPeaks, PeakChanges
from recommender.vpa.settings import ZERO_TIME, VpaSettings

__all__ = ["VpaModel", "VpaRecommendation"]

_FAR_FUTURE = np.iinfo(np.int64).max
#: Rows ingested per step of a large batch (temporaries of a few MB each).
CHUNK_ROWS = 1 << 19


class VpaModel:
    """Decaying CPU / memory-peak histograms per aggregate, fed by per-series samples."""

    def __init__(
        self,
        series_to_aggregate: np.ndarray,
        n_aggregates: int | None = None,
        settings: VpaSettings = VpaSettings(),  # noqa: B008 - frozen, shared safely
    ) -> None:
        # checked like the series indices of add_samples: [0.5] used to become aggregate 0
        mapping = checked_indices(series_to_aggregate, None, "aggregate")
        if mapping.ndim != 1:
            raise VpaInputError("series_to_aggregate must be one-dimensional")
        self.series_to_aggregate = mapping.copy()
        inferred = int(self.series_to_aggregate.max()) + 1 if self.series_to_aggregate.size else 0
        self.n_aggregates = inferred if n_aggregates is None else int(n_aggregates)
        if self.n_aggregates < inferred:
            raise VpaInputError("n_aggregates is smaller than the largest aggregate index + 1")
        self.settings = settings
        self.cpu_buckets = cpu_buckets(settings)
        self.memory_buckets = memory_buckets(settings)
        a, s = self.n_aggregates, self.n_series
        self.cpu = DecayingHistograms.empty(
            a,
            self.cpu_buckets.count,
            settings.cpu_half_life_seconds,
            settings.max_decay_exponent,
            settings.epsilon,
        )
        self.memory = DecayingHistograms.empty(
            a,
            self.memory_buckets.count,
            settings.memory_half_life_seconds,
            settings.max_decay_exponent,
            settings.epsilon,
        )
        # Per aggregate, from CPU samples only (as upstream).
        self.first_sample = np.full(a, ZERO_TIME, dtype=np.int64)
        self.last_sample = np.full(a, ZERO_TIME, dtype=np.int64)
        self.sample_count = np.zeros(a, dtype=np.int64)
        # Per series.
        self.last_cpu_time = np.full(s, ZERO_TIME, dtype=np.int64)
        self.peaks = MemoryPeaks(
            s, settings.memory_interval, settings.oom_min_bump, settings.oom_bump_ratio
        )

    @property
    def n_series(self) -> int:
        return int(self.series_to_aggregate.shape[0])

    def use_oom_bumps(self, ratio: np.ndarray, min_bump: np.ndarray) -> None:
        """Per-series OOM bumps (NaN keeps the settings'): a VPA's containerPolicies may
        set `oomBumpUpRatio` and `oomMinBumpUp` for its containers (upstream's AEP-8026)."""
        ratio = np.asarray(ratio, dtype=np.float64)
        min_bump = np.asarray(min_bump, dtype=np.float64)
        if ratio.shape != (self.n_series,) or min_bump.shape != (self.n_series,):
            raise VpaInputError("OOM bumps need one ratio and one minimum per series")
        if np.any(ratio < 1) or np.any(min_bump < 0) or np.isinf(ratio).any():
            raise VpaInputError("an OOM bump ratio is at least 1 and a minimum bump at least 0")
        known = ~np.isnan(ratio)
        self.peaks.oom_bump_ratio[known] = ratio[known]
        known = ~np.isnan(min_bump)
        self.peaks.oom_min_bump[known] = min_bump[known]

    # --- ingest ---------------------------------------------------------------------

    def add_samples(
        self, series: np.ndarray, t: np.ndarray, cpu: np.ndarray, memory: np.ndarray
    ) -> None:
        """Bulk ingest: series index, UNIX seconds, cores, bytes (NaN = resource missing).

        Rows of different series may come in any order; within a series, rows are
        taken in the given order and one not newer than what the series already
        saw is dropped (CPU: not after the newest; memory: before the newest).
        """
        series, t, cpu, memory = checked_chunk(series, t, cpu, memory, size=self.n_series)
        # Chunks in row order keep every series' own order, so they replay the batch
        # exactly; small chunks also keep temporaries in reused, cache-sized memory.
        cuts = (slice(start, start + CHUNK_ROWS) for start in range(0, series.size, CHUNK_ROWS))
        chunks = ((series[rows], t[rows], cpu[rows], memory[rows]) for rows in cuts)
        self._add_chunks(chunks, series.size > CHUNK_ROWS)

    def add_chunks(self, chunks: Iterable[Chunk], batched: bool) -> None:
        """One batch handed over as `add_samples` cuts it: its chunks of at most
        `CHUNK_ROWS` rows in order, each (series, t, cpu, memory) taken as `add_samples`
        takes its rows. `batched`: the batch is more than one chunk (`add_samples` of
        more than `CHUNK_ROWS` rows), whose reference times settle at its end."""
        self._add_chunks((checked_chunk(*chunk, size=self.n_series) for chunk in chunks), batched)

    def _add_chunks(self, chunks: Iterable[Chunk], batched: bool) -> None:
        if batched:
            self.cpu.begin_batch()
            self.memory.begin_batch()
        for chunk in chunks:
            if chunk[0].size == 0:
                continue
            order = group_by_series(chunk[0])
            if order is not None:
                chunk = (chunk[0][order], chunk[1][order], chunk[2][order], chunk[3][order])
            self._ingest(*chunk)
        if batched:
            self.cpu.end_batch()
            self.memory.end_batch()

    def add_window(self, t: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        """Replay fast path: one sample per series at time `t` (NaN = none)."""
        cpu = checked_amounts(cpu, "cpu")
        memory = checked_amounts(memory, "memory")
        if cpu.shape != (self.n_series,) or memory.shape != (self.n_series,):
            raise VpaInputError("cpu and memory must have shape (n_series,)")
        rows = np.flatnonzero(~(np.isnan(cpu) & np.isnan(memory)))
        if rows.size == 0:
            return
        times = np.full(rows.size, int(t), dtype=np.int64)
        self._ingest(rows, times, cpu[rows], memory[rows])

    def add_oom(self, series: np.ndarray, t: np.ndarray, memory_request: np.ndarray) -> None:
        """OOM kills: each adds a memory peak of max(used + bump, used * ratio).

        used = max(memory request, the interval's usage peak); a NaN request means
        none is set. Processed even when older than the last sample, but dropped
        when before the current interval. Several kills of one series are applied
        in the given order.
        """
        series = checked_indices(series, self.n_series, "series")
        t = checked_times(t)
        request = checked_amounts(memory_request, "memory_request")
        if not series.shape == t.shape == request.shape or series.ndim != 1:
            raise VpaInputError("series, t and memory_request must be 1-D arrays of one length")
        if series.size == 0:
            return
        order = np.argsort(series, kind="stable")
        series, t, request = series[order], t[order], request[order]
        segments = Segments.of(series)
        rank = np.arange(series.size) - np.repeat(
            segments.starts, np.diff(np.append(segments.starts, series.size))
        )
        for round_index in range(int(rank.max()) + 1):
            pick = rank == round_index
            self._change_memory(self.peaks.record_oom(series[pick], t[pick], request[pick]))

    def _ingest(self, series: np.ndarray, t: np.ndarray, cpu: np.ndarray, memory: np.ndarray):
        if self.settings.quantize_usage:
            # As the metrics API hands usage over: whole millicores and bytes, rounded up.
            cpu = np.ceil(np.rint(cpu * 1e9) / 1e6)
            memory = np.ceil(memory)
        segments = Segments.of(series)
        cpu_kept = accept_in_order(t, cpu >= 0, segments, self.last_cpu_time, strict=True)
        memory_kept = accept_in_order(t, memory >= 0, segments, self.peaks.last_time, strict=False)
        self._add_cpu(*kept_rows(cpu_kept, series, t, cpu))
        memory_rows = kept_rows(memory_kept, series, t, memory)
        if memory_rows[0].size:
            self._change_memory(self.peaks.observe(*memory_rows))

    def _add_cpu(self, series: np.ndarray, t: np.ndarray, usage: np.ndarray) -> None:
        """Accepted CPU samples (millicores if quantised, else cores), grouped by series."""
        if series.size == 0:
            return
        segments = Segments.of(series)
        ends = segments.ends(series.size)
        self.last_cpu_time[segments.series] = t[ends]
        segment_aggregate = self.series_to_aggregate[segments.series]
        first = np.full(self.n_aggregates, _FAR_FUTURE, dtype=np.int64)
        np.minimum.at(first, segment_aggregate, t[segments.starts])
        last = np.full(self.n_aggregates, ZERO_TIME, dtype=np.int64)
        np.maximum.at(last, segment_aggregate, t[ends])
        rows = self.series_to_aggregate[series]
        self.cpu.advance_reference(first, last, rows, t)
        weights = self.cpu.decay_factor(rows, t)
        weights *= self.settings.cpu_sample_weight
        if self.settings.quantize_usage:
            buckets = self.cpu_buckets.find_millicores(usage)
        else:
            buckets = self.cpu_buckets.find(usage)
        self.cpu.add(rows, buckets, weights)
        self.sample_count += np.bincount(rows, minlength=self.n_aggregates)
        touched = last > ZERO_TIME
        earlier = touched & ((self.first_sample == ZERO_TIME) | (first < self.first_sample))
        self.first_sample = np.where(earlier, first, self.first_sample)
        self.last_sample = np.maximum(self.last_sample, last)

    def _change_memory(self, changes: PeakChanges) -> None:
        """Apply peak changes of series to their aggregates' memory histograms."""
        removed_series, removed_bytes, removed_times = changes.removed
        added_series, added_bytes, added_times = changes.added
        removed_rows = self.series_to_aggregate[removed_series]
        added_rows = self.series_to_aggregate[added_series]
        rows = np.concatenate([removed_rows, added_rows])
        if rows.size == 0:
            return
        times = np.concatenate([removed_times, added_times])
        first = np.full(self.n_aggregates, _FAR_FUTURE, dtype=np.int64)
        np.minimum.at(first, rows, times)
        last = np.full(self.n_aggregates, ZERO_TIME, dtype=np.int64)
        np.maximum.at(last, rows, times)
        self.memory.advance_reference(first, last, rows, times)
        weight = self.settings.memory_peak_weight
        self.memory.subtract(
            removed_rows,
            self.memory_buckets.find(removed_bytes),
            weight * self.memory.decay_factor(removed_rows, removed_times),
        )
        self.memory.add(
            added_rows,
            self.memory_buckets.find(added_bytes),
            weight * self.memory.decay_factor(added_rows, added_times),
        )

    # --- recommendation ---------------------------------------------------------------

    def confidence(self, resource: str = "cpu") -> np.ndarray:
        """Days of history per aggregate: min(span of CPU samples, CPU samples / 1440), a
        day being `resource`'s confidence interval (upstream's per-resource flags)."""
        return confidence_days(
            self.first_sample,
            self.last_sample,
            self.sample_count,
            self.settings.confidence_interval_of(resource),
        )

    def recommend(self, containers_per_pod: np.ndarray | None = None) -> VpaRecommendation:
        """Target / lower / upper per aggregate, exactly as upstream's estimators stack.

        containers_per_pod: per aggregate, how many containers share the pod
        minimum (25 m, 250 MiB by default); 1 when omitted.
        """
        s = self.settings
        if containers_per_pod is None:
            containers = np.ones(self.n_aggregates)
        else:
            containers = np.asarray(containers_per_pod, dtype=np.float64)
            if containers.shape != (self.n_aggregates,) or not np.all(containers >= 1):
                raise ValueError("containers_per_pod needs one count >= 1 per aggregate")
        cpu_cores = percentile_values(self.cpu, self.cpu_buckets.starts, s.percentiles("cpu"))
        memory_bytes = percentile_values(
            self.memory, self.memory_buckets.starts, s.percentiles("memory")
        )
        confidence = self.confidence()
        cpu = estimate_bounds(
            to_amount(cpu_cores * 1000.0),
            confidence,
            pod_minimum_share(s.pod_min_cpu * 1000.0, containers),
            s,
            s.cpu_round_millicores,
        )
        memory = estimate_bounds(
            to_amount(memory_bytes),
            self.confidence("memory"),
            pod_minimum_share(s.pod_min_memory, containers),
            s,
            s.memory_round_bytes,
        )
        return VpaRecommendation(
            cpu_target=cpu.target / 1000.0,
            cpu_lower=cpu.lower / 1000.0,
            cpu_upper=cpu.upper / 1000.0,
            memory_target=memory.target,
            memory_lower=memory.lower,
            memory_upper=memory.upper,
            confidence=confidence,
        )

    # --- housekeeping and checkpoints -----------------------------------------------------

    def expire(self, now: int) -> np.ndarray:
        """Forget aggregates whose last CPU sample is a full memory window old (upstream GC).

        Returns the indices that were reset. Series state is kept, as upstream keeps
        the container states of pods that still exist.
        """
        stale = (self.sample_count > 0) & (
            now - self.last_sample >= self.settings.memory_window_length
        )
        rows = np.flatnonzero(stale)
        self._reset_aggregates(rows)
        return rows

    def _reset_aggregates(self, rows: np.ndarray) -> None:
        self.cpu.reset(rows)
        self.memory.reset(rows)
        self.first_sample[rows] = ZERO_TIME
        self.last_sample[rows] = ZERO_TIME
        self.sample_count[rows] = 0

    def to_checkpoints(
        self, aggregate_indices: np.ndarray, now: int | None = None
    ) -> list[dict[str, Any]]:
        """VerticalPodAutoscalerCheckpoint `status` dicts, one per requested aggregate
        (`export_checkpoints(...).statuses()`)."""
        return self.export_checkpoints(aggregate_indices, now).statuses()

    def export_checkpoints(
        self, aggregate_indices: np.ndarray, now: int | None = None
    ) -> CheckpointExport:
        """The VerticalPodAutoscalerCheckpoint statuses of the requested aggregates, in
        columns; `.json()` writes one document each, `.statuses()` gives the dicts.

        With `now`, the peaks of memory intervals still in progress at `now` are
        left out (upstream's checkpoint writer does this so a restart does not
        count them twice) and lastUpdateTime is set; without it the statuses hold
        the complete state.
        """
        rows = checked_indices(aggregate_indices, self.n_aggregates, "aggregate")
        if np.unique(rows).size != rows.size:
            raise ValueError("aggregate_indices must be distinct")
        memory = self.memory.read_rows(rows)
        if now is not None and rows.size:
            memory = self._memory_without_running_peaks(rows, now)
        max_weight = self.settings.checkpoint_max_weight
        return CheckpointExport(
            cpu=HistogramColumns.of(self.cpu.read_rows(rows), max_weight),
            memory=HistogramColumns.of(memory, max_weight),
            first_sample=self.first_sample[rows],
            last_sample=self.last_sample[rows],
            sample_count=np.asarray(self.sample_count[rows], dtype=np.int64),
            updated=now,
        )

    def _memory_without_running_peaks(self, rows: np.ndarray, now: int) -> DecayingHistograms:
        """A copy of these rows' memory histograms less the peaks of intervals in progress."""
        memory = self.memory.select(rows)
        position = np.full(self.n_aggregates, -1, dtype=np.int64)
        position[rows] = np.arange(rows.size)
        series, held, ends = self.peaks.in_progress(now)
        target = position[self.series_to_aggregate[series]]
        wanted = target >= 0
        memory.subtract(
            target[wanted],
            self.memory_buckets.find(held[wanted]),
            self.settings.memory_peak_weight * memory.decay_factor(target[wanted], ends[wanted]),
        )
        return memory

    def load_checkpoint(self, aggregate: int, status: dict[str, Any]) -> None:
        """Replace one aggregate's histograms and sample bookkeeping by a checkpoint status.

        The whole status is checked first (CheckpointError): a bad one changes nothing.
        """
        if not 0 <= aggregate < self.n_aggregates:
            raise CheckpointError(f"aggregate {aggregate} outside [0, {self.n_aggregates})")
        loaded = load_status(status, self.cpu.n_buckets, self.memory.n_buckets)
        self._reset_aggregates(np.array([aggregate]))
        for histograms, histogram in ((self.cpu, loaded.cpu), (self.memory, loaded.memory)):
            histograms.weights[aggregate] = histogram.weights
            histograms.total[aggregate] = histogram.total
            histograms.reference[aggregate] = histogram.reference
        self.first_sample[aggregate] = loaded.first_sample
        self.last_sample[aggregate] = loaded.last_sample
        self.sample_count[aggregate] = loaded.sample_count
