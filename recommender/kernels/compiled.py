"""The one way the kernels are compiled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from numba import njit

Kernel = TypeVar("Kernel", bound=Callable[..., Any])


def compiled(function: Kernel) -> Kernel:
    """`njit(cache=True)`: machine code cached on disk (beside the source, or in
    NUMBA_CACHE_DIR), so only a fresh install pays the compilation. Where no cache
    directory is writable (a read-only image without NUMBA_CACHE_DIR) numba refuses
    `cache=True` outright; the kernel is then compiled in each process instead."""
    try:
        kernel = njit(cache=True)(function)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        kernel = njit(function)
    return kernel  # type: ignore[return-value]
