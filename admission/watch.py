"""The webhook's VPAs and LimitRanges kept current by watching them, as upstream's informers do.

One kind's objects live in a `Store`: a list fills it, then each watch event changes
the one object it names, so a VPA created a moment before its pods is seen at once
and a big cluster is not re-listed every few seconds. A `Watcher` thread per kind
lists, watches from the list's resourceVersion, and lists again when the watch
cannot go on (410 Gone, a cut connection, an API server that is away), with a
growing pause between failures; until a list succeeds the last objects stay in use.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any, Generic, Protocol, TypeVar

import kubernetes.watch
from pydantic import ValidationError

from tailor.api.limitrange import LimitRange
from tailor.api.meta import by_namespace
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.kube import ClusterError, Listing, ResourceVersionGone, WatchEvent, new_watch

LOG = logging.getLogger("tailor.admission")
# The API server ends each watch call after this long (a bookmark first) and the watcher
# calls again from the last resourceVersion: a silent connection is noticed, and each call
# that ends on schedule counts as a pass for the health check.
WATCH_SECONDS = 30
MAX_RETRY_SECONDS = 30.0
# A watcher's stop() waits this long for its thread.
_STOP_SECONDS = 10.0

M = TypeVar("M", VerticalPodAutoscaler, LimitRange)
Recorder = Callable[[bool, float], None]
WatchCall = Callable[[str, int, kubernetes.watch.Watch], Generator[WatchEvent, None, None]]


def retry_delay(failures: int) -> float:
    """Seconds before listing again after `failures` failures in a row: 0, 1, 2, 4 ... 30.

    The first retry is at once (a watch cut by a restarting API server lists again
    without delay); an API server that stays away is asked ever less often, never in
    a tight loop.
    """
    if failures <= 1:
        return 0.0
    return min(MAX_RETRY_SECONDS, 2.0 ** (failures - 2))


def _why(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "object"
    return f"{where}: {first['msg']}"


class Store(Generic[M]):
    """One kind's objects by namespace: the last list, then every watch event since.

    Readers (request threads) take no lock: an event builds the namespace's new list
    and puts it in place in one step, and a list swaps the whole dict, so a reader sees
    a namespace before or after a change, never halfway through. `epoch` counts the
    lists installed: events of a watch begun before the latest list are not applied
    (the watcher restarts from that list's resourceVersion instead). `revision(ns)`
    changes whenever what `namespace(ns)` returns may have (`admission.verdicts`).
    """

    def __init__(self, model: type[M], kind: str) -> None:
        self.model: type[M] = model
        self.kind = kind
        self._objects: dict[str, list[M]] = {}
        self._lock = threading.Lock()
        self.epoch = 0
        self.resource_version: str | None = None  # None: list before watching
        self._changes: dict[str, int] = {}

    def namespace(self, namespace: str) -> list[M]:
        return self._objects.get(namespace, [])

    def revision(self, namespace: str) -> tuple[int, int]:
        """(lists installed, events applied to `namespace`): bumped after each change lands."""
        return self.epoch, self._changes.get(namespace, 0)

    @property
    def listed(self) -> bool:
        return self.epoch > 0

    def position(self) -> tuple[int, str | None]:
        """(epoch, resourceVersion): where a watch starts."""
        with self._lock:
            return self.epoch, self.resource_version

    def replace(self, items: Iterable[Mapping[str, Any]], resource_version: str | None) -> None:
        """Install a list (its malformed objects skipped); None: nothing to watch from."""
        grouped = by_namespace(self.model.valid_among(items))
        with self._lock:
            self._objects = grouped
            self.resource_version = resource_version
            self.epoch += 1

    def forget_version(self, epoch: int) -> None:
        """The watch from `epoch` cannot go on: list again (unless a newer list came)."""
        with self._lock:
            if self.epoch == epoch:
                self.resource_version = None

    def apply(self, event: WatchEvent, epoch: int) -> bool:
        """Apply one event of a watch begun at `epoch`; False when a newer list replaced it.

        A malformed object is skipped, as a list skips it: an ADDED or MODIFIED one that
        the model refuses removes the object of that name, and the watch goes on.
        """
        metadata = event.obj.get("metadata") if isinstance(event.obj, Mapping) else None
        if not isinstance(metadata, Mapping):
            LOG.warning("skipping a %s %s event without metadata", self.kind, event.type)
            return True
        namespace, name = str(metadata.get("namespace") or ""), metadata.get("name")
        version = metadata.get("resourceVersion")
        changed = event.type in ("ADDED", "MODIFIED", "DELETED")
        if changed and not isinstance(name, str):
            LOG.warning("skipping a %s %s event without a name", self.kind, event.type)
            changed = False
        found: M | None = None
        if changed and event.type != "DELETED":
            try:
                found = self.model.model_validate(event.obj)
            except ValidationError as error:
                LOG.warning("skipping %s %s/%s: %s", self.kind, namespace, name, _why(error))
        with self._lock:
            if self.epoch != epoch:
                return False
            if changed:
                self._put(namespace, str(name), found)
            if isinstance(version, str) and version:
                self.resource_version = version
        return True

    def _put(self, namespace: str, name: str, found: M | None) -> None:
        """The namespace's list without `name`, plus `found`, in name order (a list's order)."""
        kept = [o for o in self._objects.get(namespace, []) if o.metadata.name != name]
        if found is not None:
            kept.append(found)
            kept.sort(key=lambda o: o.metadata.name or "")
        if kept:
            self._objects[namespace] = kept
        else:
            self._objects.pop(namespace, None)
        self._changes[namespace] = self._changes.get(namespace, 0) + 1


class Watched(Protocol):
    """What a `Watcher` keeps current: a `Store`, or the owner links of `admission.owners`."""

    kind: str

    def position(self) -> tuple[int, str | None]: ...

    def replace(self, items: Iterable[Mapping[str, Any]], resource_version: str | None) -> None: ...

    def forget_version(self, epoch: int) -> None: ...

    def apply(self, event: WatchEvent, epoch: int) -> bool: ...


class Watcher:
    """Keeps one Store current on its own daemon thread: list, then watch, until `stop()`.

    Passes for the health check: every list (ok or failed) and every watch call that
    the server ended on schedule (ok) or that failed. A 410 or a watch interrupted by
    `restart()` is routine, not a failure.
    """

    def __init__(
        self,
        store: Watched,
        listing: Callable[[], Listing | None],
        watch: WatchCall,
        *,
        record: Recorder | None = None,
        absent_retry_seconds: float = MAX_RETRY_SECONDS,
        watch_seconds: int = WATCH_SECONDS,
    ) -> None:
        self.store = store
        self.listing, self.watch_call, self.record = listing, watch, record
        self.absent_retry, self.watch_seconds = absent_retry_seconds, watch_seconds
        self._watch = new_watch()
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Watcher:
        name = f"tailor-watch-{self.store.kind.lower()}"
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        return self

    def restart(self) -> None:
        """A list was installed: end the watch call under way and any pause, watch from it."""
        self._wake.set()
        self._watch.stop()

    def stop(self) -> None:
        """End the watch and wait (up to 10 s) for the thread.

        `Watch.stop()` shuts the call's socket; it is repeated until the thread ends,
        since a stop that lands while a call is being opened has no socket to shut yet.
        """
        self._stopping.set()
        self._wake.set()
        deadline = time.monotonic() + _STOP_SECONDS
        while self._thread is not None and self._thread.is_alive():
            self._watch.stop()
            self._thread.join(timeout=0.2)
            if time.monotonic() > deadline:
                break

    def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            self._wake.clear()  # a restart() from now on cuts the pause below
            epoch, version = self.store.position()
            pause = 0.0
            try:
                if version is None:
                    pause = self._list()
                elif self._follow(epoch, version):
                    failures = 0
            except ClusterError as error:
                if self._interrupted(epoch):
                    continue  # restart() or stop() cut the call: not a failure
                failures += 1
                pause = retry_delay(failures)
                self.store.forget_version(epoch)
                if isinstance(error, ResourceVersionGone):
                    LOG.info("%s; listing %s again", error, self.store.kind)
                else:
                    LOG.error(
                        "%s; keeping the last %s, listing again in %.0fs",
                        error,
                        self.store.kind,
                        pause,
                    )
            except Exception:  # a bug must not end the thread: log it, list again
                failures += 1
                pause = retry_delay(failures)
                self.store.forget_version(epoch)
                LOG.exception("watching %s failed; listing again in %.0fs", self.store.kind, pause)
            if pause > 0:
                self._wake.wait(pause)

    def _interrupted(self, epoch: int) -> bool:
        return self._stopping.is_set() or self.store.position()[0] != epoch

    def _list(self) -> float:
        """List and install; the pause before the next try (the kind is not served: later)."""
        begun, listing = time.monotonic(), None
        try:
            listing = self.listing()
        except ClusterError:
            self._record(False, begun)
            raise
        self._record(True, begun)
        if listing is None:
            self.store.replace([], None)
            return self.absent_retry
        self.store.replace(listing.items, listing.resource_version)
        return 0.0

    def _follow(self, epoch: int, version: str) -> bool:
        """One watch call; True when the server ended it on schedule."""
        begun = time.monotonic()
        events = self.watch_call(version, self.watch_seconds, self._watch)
        try:
            for event in events:
                if self._stopping.is_set() or not self.store.apply(event, epoch):
                    return False
        except ClusterError as error:
            if not isinstance(error, ResourceVersionGone) and not self._interrupted(epoch):
                self._record(False, begun)
            raise
        finally:
            events.close()
        if self._interrupted(epoch):
            return False
        self._record(True, begun)
        return True

    def _record(self, succeeded: bool, begun: float) -> None:
        if self.record is not None:
            self.record(succeeded, time.monotonic() - begun)
