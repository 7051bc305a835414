"""admission.watch without an API server: events applied to a Store, the watcher's recovery.

The real API server's side (events arriving, a real 410, a cut connection) is in
test_watch_cluster.py; here the listing and the watch are scripted, so each
failure happens exactly when the test says.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Generator, Iterator
from typing import Any

import kubernetes.watch
import pytest

from admission.watch import Store, Watcher, retry_delay
from tailor.api.vpa import UpdateMode, VerticalPodAutoscaler
from tailor.kube import ClusterError, Listing, ResourceVersionGone, WatchEvent
from tests.cluster.waiting import wait_until

Json = dict[str, Any]


def vpa_json(name: str, mode: str = "Auto", namespace: str = "shop", version: str = "7") -> Json:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": version},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "updatePolicy": {"updateMode": mode},
        },
    }


def store(*items: Json, version: str | None = "5") -> Store[VerticalPodAutoscaler]:
    listed = Store(VerticalPodAutoscaler, "VerticalPodAutoscalers")
    listed.replace(items, version)
    return listed


def modes(
    listed: Store[VerticalPodAutoscaler], namespace: str = "shop"
) -> dict[str, UpdateMode | None]:
    """The namespace's VPAs (in the store's order) and their spec's updateMode."""
    return {
        v.name: v.spec.update_policy.update_mode if v.spec.update_policy else None
        for v in listed.namespace(namespace)
    }


def test_retries_start_at_once_then_back_off_to_thirty_seconds() -> None:
    assert [retry_delay(n) for n in range(1, 9)] == [0, 1, 2, 4, 8, 16, 30, 30]


def test_added_modified_and_deleted_events_change_one_object_each() -> None:
    listed = store(vpa_json("web"))
    epoch = listed.epoch
    assert listed.apply(WatchEvent("ADDED", vpa_json("db", "Initial", version="8")), epoch)
    assert listed.apply(WatchEvent("ADDED", vpa_json("api", namespace="other", version="9")), epoch)
    assert modes(listed) == {"db": UpdateMode.INITIAL, "web": UpdateMode.AUTO}
    assert list(modes(listed)) == ["db", "web"]  # name order, as a list has them
    assert listed.apply(WatchEvent("MODIFIED", vpa_json("web", "Off", version="10")), epoch)
    assert modes(listed) == {"db": UpdateMode.INITIAL, "web": UpdateMode.OFF}
    assert listed.apply(WatchEvent("DELETED", vpa_json("db", version="11")), epoch)
    assert listed.apply(WatchEvent("DELETED", vpa_json("api", namespace="other")), epoch)
    assert modes(listed) == {"web": UpdateMode.OFF}
    assert listed.namespace("other") == []
    assert listed.position() == (epoch, "7")  # the last event's resourceVersion


def test_a_bookmark_only_moves_the_resource_version() -> None:
    listed = store(vpa_json("web"))
    bookmark = {"kind": "VerticalPodAutoscaler", "metadata": {"resourceVersion": "42"}}
    assert listed.apply(WatchEvent("BOOKMARK", bookmark), listed.epoch)
    assert modes(listed) == {"web": UpdateMode.AUTO}
    assert listed.resource_version == "42"


def test_a_malformed_object_is_skipped_and_the_next_event_still_applies(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="tailor.admission")
    listed = store(vpa_json("web"), vpa_json("db"))
    epoch = listed.epoch
    broken = vpa_json("web", "Sometimes", version="20")  # not an updateMode
    assert listed.apply(WatchEvent("MODIFIED", broken), epoch)
    assert listed.apply(WatchEvent("ADDED", vpa_json("new", "Sometimes", version="21")), epoch)
    assert listed.apply(WatchEvent("ADDED", {"kind": "VerticalPodAutoscaler"}), epoch)
    assert listed.apply(WatchEvent("ADDED", {"metadata": {"namespace": "shop"}}), epoch)
    assert listed.apply(WatchEvent("ADDED", "not an object"), epoch)  # type: ignore[arg-type]
    # A list skips what does not validate; so does the watch: the broken "web" is gone.
    assert modes(listed) == {"db": UpdateMode.AUTO}
    assert listed.resource_version == "21"
    assert listed.apply(WatchEvent("MODIFIED", vpa_json("web", "Initial", version="22")), epoch)
    assert modes(listed) == {"db": UpdateMode.AUTO, "web": UpdateMode.INITIAL}
    skipped = [r.getMessage() for r in caplog.records]
    assert skipped[0].startswith("skipping VerticalPodAutoscalers shop/web: spec.updatePolicy")
    assert skipped[1].startswith("skipping VerticalPodAutoscalers shop/new:")
    assert skipped[2:] == [
        "skipping a VerticalPodAutoscalers ADDED event without metadata",
        "skipping a VerticalPodAutoscalers ADDED event without a name",
        "skipping a VerticalPodAutoscalers ADDED event without metadata",
    ]


def test_events_of_a_watch_older_than_the_last_list_are_not_applied() -> None:
    listed = store(vpa_json("web"))
    old = listed.epoch
    listed.replace([vpa_json("web", "Off", version="30")], "30")
    assert not listed.apply(WatchEvent("DELETED", vpa_json("web", version="6")), old)
    assert modes(listed) == {"web": UpdateMode.OFF}
    assert listed.position() == (old + 1, "30")
    listed.forget_version(old)  # that old watch's failure does not discard the newer list
    assert listed.resource_version == "30"


class Script:
    """A listing and a watch that do what the test queued, one step per call."""

    def __init__(self) -> None:
        self.lists: list[Listing | Exception | None] = []
        self.watches: list[list[WatchEvent] | Exception] = []
        self.listed, self.watched = 0, 0
        self.more = threading.Event()  # the watch call under way ends when set

    def listing(self) -> Listing | None:
        self.listed += 1
        step = self.lists.pop(0) if self.lists else ClusterError("cannot reach the API server")
        if isinstance(step, Exception):
            raise step
        return step

    def watch(
        self, version: str, seconds: int, watch: kubernetes.watch.Watch
    ) -> Generator[WatchEvent, None, None]:
        self.watched += 1
        step = self.watches.pop(0) if self.watches else []
        if isinstance(step, Exception):
            raise step
        watch._stop = False  # as Watch.stream() begins
        yield from step
        while not self.more.wait(0.02):  # until the "server" ends the call, or stop()
            if watch._stop:
                return
        self.more.clear()


def listing(*items: Json, version: str = "100") -> Listing:
    return Listing(list(items), version)


@pytest.fixture
def script() -> Iterator[Script]:
    yield Script()


def running(script: Script, listed: Store[VerticalPodAutoscaler], **options: Any) -> Watcher:
    return Watcher(listed, script.listing, script.watch, **options).start()


def test_a_gone_resource_version_is_listed_again_and_the_watch_goes_on(
    script: Script, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tailor.admission")
    listed = store(vpa_json("web"))
    script.watches = [
        ResourceVersionGone("watch of verticalpodautoscalers: Expired: too old resource version")
    ]
    script.lists = [listing(vpa_json("web", "Off"), vpa_json("db"))]
    script.watches.append([WatchEvent("ADDED", vpa_json("api", version="101"))])
    watcher = running(script, listed)
    try:
        wait_until(lambda: "api" in modes(listed), timeout=5, what="the event after the relist")
    finally:
        watcher.stop()
    assert modes(listed) == {"api": UpdateMode.AUTO, "db": UpdateMode.AUTO, "web": UpdateMode.OFF}
    assert (script.listed, script.watched) == (1, 2)
    assert [r.getMessage() for r in caplog.records] == [
        "watch of verticalpodautoscalers: Expired: too old resource version; "
        "listing VerticalPodAutoscalers again"
    ]


def test_an_api_server_that_is_away_leaves_the_last_objects_and_is_retried_ever_later(
    script: Script, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tailor.admission")
    passes: list[bool] = []
    listed = store(vpa_json("web"))
    script.watches = [ClusterError("watch of verticalpodautoscalers broken: connection reset")]
    watcher = running(script, listed, record=lambda ok, _: passes.append(ok))
    time.sleep(2.5)  # lists at once, 1 s later, then 2 s later: no tight loop
    try:
        assert script.listed == 2
        assert modes(listed) == {"web": UpdateMode.AUTO}
        script.lists = [listing(vpa_json("web", "Off"))]
        wait_until(lambda: modes(listed) == {"web": UpdateMode.OFF}, timeout=5, what="a list")
    finally:
        watcher.stop()
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "watch of verticalpodautoscalers broken: connection reset; keeping the last "
        "VerticalPodAutoscalers, listing again in 0s",
        "cannot reach the API server; keeping the last VerticalPodAutoscalers, listing again in 1s",
        "cannot reach the API server; keeping the last VerticalPodAutoscalers, listing again in 2s",
    ]
    assert passes[:4] == [False, False, False, True]  # the watch call, two lists, the third


def test_an_unexpected_error_is_logged_with_its_trace_and_the_thread_goes_on(
    script: Script, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="tailor.admission")
    listed = store(version=None)  # never listed: the watcher lists first
    script.lists = [RuntimeError("a bug"), listing(vpa_json("web"))]
    watcher = running(script, listed)
    try:
        wait_until(lambda: "web" in modes(listed), timeout=5, what="the second list")
    finally:
        watcher.stop()
    [record] = caplog.records
    assert record.getMessage() == "watching VerticalPodAutoscalers failed; listing again in 0s"
    assert record.exc_info is not None


def test_a_kind_that_is_not_served_has_no_objects_and_is_listed_again_later(
    script: Script,
) -> None:
    listed = store(vpa_json("web"), version=None)
    script.lists = [None, None, listing(vpa_json("db"))]
    watcher = running(script, listed, absent_retry_seconds=0.2)
    try:
        wait_until(lambda: script.listed >= 2 and not modes(listed), timeout=5, what="no VPAs")
        wait_until(lambda: "db" in modes(listed), timeout=5, what="the CRD installed")
    finally:
        watcher.stop()


def test_a_watch_call_that_ends_on_schedule_is_a_pass_and_stop_ends_the_thread(
    script: Script,
) -> None:
    passes: list[bool] = []
    listed = store(vpa_json("web"))
    watcher = running(script, listed, record=lambda ok, _: passes.append(ok))
    wait_until(lambda: script.watched == 1, timeout=5, what="a watch call")
    script.more.set()
    wait_until(lambda: passes == [True], timeout=5, what="a pass")
    begun = time.monotonic()
    watcher.stop()
    script.more.set()
    assert time.monotonic() - begun < 1
    assert watcher._thread is not None and not watcher._thread.is_alive()
