"""The cyclic garbage collector paused for a pass (pure).

A pass lists every pod of the cluster as JSON and makes its own objects (counts, plans,
candidates, outcomes, the API server's answers): dicts, lists, tuples and strings
freed by reference counting. Python's cyclic collector does not know that: the pass's
allocations set off its collections, and each walks the objects still alive, the
listing and what the pass has made so far. Freezing the listing (`gc.freeze`) kept it
out of those walks, but the pass's own objects were still walked, again and again, as
they grew. So the collector is off while a pass runs and back as it was after: nothing
the pass makes needs it to be freed, and a cycle made meanwhile (none is expected) is
collected at its first collection after the pass.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Within: no automatic collection. After: the collector enabled again if it was
    before (one turned off by someone else stays off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
