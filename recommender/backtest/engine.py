"""The closed-loop replay of one strategy over one block of containers.

One Python loop over windows; every step is a handful of numpy operations over
all containers of the block. At window t:

1. the requests decided at the end of window t-1 are in force (the data's own,
   or unset, before the strategy's first decision);
2. a window whose memory peak exceeds the memory limit in force is an OOM kill
   (recorded OOM events were folded into the peaks, see history.py);
3. the strategy observes the window as the live recommender would have: a
   killed container never uses more than its limit, so its memory sample is
   capped at the limit, and it then learns of the kill with the memory in use
   (the limit);
4. the strategy decides the requests for window t+1 (its own update policy);
   the replay then plays the admission controller: NaN proposals keep the
   current value, and the memory limit is the memory request times the
   container's limit / request ratio, the same rule for every strategy.

A change is a window whose CPU or memory request differs from the previous
window's; the strategy's first setting of a container is not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from recommender.backtest.container_blocks import ReplayBlock
from recommender.replay import Requests, Strategy, admit, differs, observe_window


@dataclass(frozen=True)
class Trajectory:
    """What one strategy did over one block; arrays are (windows, containers)."""

    cpu: np.ndarray  # CPU request in force, cores
    memory: np.ndarray  # memory request in force, bytes
    memory_limit: np.ndarray  # memory limit in force, bytes
    oom: np.ndarray  # bool: an OOM kill in this window
    changed: np.ndarray  # bool: requests changed at the start of this window


def _read_only(values: np.ndarray) -> np.ndarray:
    view = values.view()
    view.flags.writeable = False
    return view


def replay(
    block: ReplayBlock, strategy: Strategy, on_window: Callable[[int], None] | None = None
) -> Trajectory:
    """Step `strategy` through every window of `block`, closing the OOM loop."""
    n, windows = block.size, block.usage.n_windows
    cpu_usage = _read_only(np.ascontiguousarray(block.usage.cpu.T))
    peaks = _read_only(np.ascontiguousarray(block.usage.memory.T))
    ratio = block.memory_limit_ratio
    out = Trajectory(
        cpu=np.empty((windows, n)),
        memory=np.empty((windows, n)),
        memory_limit=np.empty((windows, n)),
        oom=np.zeros((windows, n), dtype=bool),
        changed=np.zeros((windows, n), dtype=bool),
    )
    strategy.reset(block.fleet())
    current = Requests(block.initial.cpu, block.initial.memory, block.initial.memory * ratio)
    set_by_strategy = np.zeros(n, dtype=bool)
    for t in range(windows):
        out.cpu[t] = current.cpu
        out.memory[t] = current.memory
        out.memory_limit[t] = current.memory_limit
        out.oom[t] = observe_window(strategy, t, cpu_usage[t], peaks[t], current.memory_limit)
        admitted = admit(strategy.decide(t, current.copy()), current, ratio)
        if t + 1 < windows:
            changed = differs(admitted.cpu, current.cpu) | differs(admitted.memory, current.memory)
            out.changed[t + 1] = changed & set_by_strategy
            set_by_strategy |= changed
        current = admitted
        if on_window is not None:
            on_window(t)
    return out
