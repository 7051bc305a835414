"""The cyclic garbage collector kept off what a pass has read (pure).

A pass lists every pod of the cluster as JSON: dicts, lists and strings without a
reference cycle, freed by reference counting when the pass ends. Python's cyclic
collector does not know that: each of its full collections walks every tracked object,
and the pass's own allocations (counts, plans, the API server's answers) set off
several during a pass over 10,000 pods, each walking the whole listing again. Freezing
what is alive once the cluster is read (`gc.freeze`) moves it out of the collector's
generations until the pass ends; nothing is freed later than it would have been, as
none of it is garbage while the pass holds it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def read_objects_frozen() -> Iterator[None]:
    """Within: what is alive on entry is out of the cyclic collector's reach. When
    something else froze objects already (a pre-forking server does), the freeze is theirs
    to manage and nothing is done."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
