"""The recent usage a live strategy remembers, as a sliding (series, windows) matrix.

The last `capacity` windows are visible as a contiguous `UsageArrays` without copying:
storage is twice the capacity and shifted back once full, so appending stays amortised
O(series).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from recommender.data.arrays import UsageArrays


class UsageBuffer:
    """The last `capacity` windows of CPU and memory usage of every series."""

    def __init__(self, keys: pd.DataFrame, start: int, step: int, capacity: int) -> None:
        self.keys, self.start, self.step, self.capacity = keys, start, step, capacity
        self._cpu = np.full((len(keys), 2 * capacity), np.nan)
        self._memory = np.full((len(keys), 2 * capacity), np.nan)
        self._filled = 0  # columns of storage in use
        self._first_window = 0  # absolute window number of storage column 0
        self.next_window = 0  # absolute number of the next window expected

    def append(self, window: int, cpu: np.ndarray, memory: np.ndarray) -> None:
        """Record window `window`; skipped windows stay NaN."""
        if window < self.next_window:
            raise ValueError(f"window {window} arrives after window {self.next_window - 1}")
        for _ in range(window - self.next_window + 1):
            if self._filled == self._cpu.shape[1]:  # full: shift the last capacity back
                for stored in (self._cpu, self._memory):
                    stored[:, : self.capacity] = stored[:, -self.capacity :]
                    stored[:, self.capacity :] = np.nan
                self._first_window += self._filled - self.capacity
                self._filled = self.capacity
            self._filled += 1
        self._cpu[:, self._filled - 1] = cpu
        self._memory[:, self._filled - 1] = memory
        self.next_window = window + 1

    def raise_latest_memory(self, rows: np.ndarray, memory: np.ndarray) -> None:
        """Lift the last window's memory of `rows` to at least `memory` (bytes)."""
        if self._filled:
            column = self._memory[rows, self._filled - 1]
            self._memory[rows, self._filled - 1] = np.fmax(column, memory)

    def view(self) -> UsageArrays:
        """The remembered windows as usage arrays (a view, do not modify)."""
        begin = max(0, self._filled - self.capacity)
        window0 = self._first_window + begin
        return UsageArrays(
            keys=self.keys,
            start=self.start + window0 * self.step,
            step=self.step,
            cpu=self._cpu[:, begin : self._filled],
            memory=self._memory[:, begin : self._filled],
        )

    def recent(self, windows: int) -> tuple[np.ndarray, np.ndarray]:
        """CPU and memory of the last `windows` windows: (series, windows) each."""
        begin = max(0, self._filled - windows)
        return self._cpu[:, begin : self._filled], self._memory[:, begin : self._filled]
