"""The forecaster's sequential loops, compiled (numba).

Holt-Winters walks 14 days of blocks one after the other, the fleet allocation runs
nested bisections per series, and the margin replay follows each block window by
window: recurrences, where each step needs the one before. Written with numpy they are
a dozen calls per step on arrays of a few hundred values, so numpy's per-call cost
(about 1 µs on an idle core, several on a busy one), not the arithmetic, bounds them:
thousands of calls per forecast plan. Compiled, each step is a few instructions.

The standing rule for every kernel: `@njit(cache=True)` without `fastmath` (the
compiler may neither fuse a multiply and an add nor reorder a sum), sums taken left to
right, and the golden outputs (plans and backtests) unchanged bit for bit by any change
to a kernel.

numba is imported only here, and these modules only from inside the forecaster's
functions: the CLI starts without it. The first call of a kernel in a fresh checkout
compiles it and caches the machine code beside the source in `__pycache__` (or in
NUMBA_CACHE_DIR: the image sets it to /tmp, the one writable place of its read-only
root); later processes load it in milliseconds. Compile and load times are on
docs/results/performance.md.
"""
