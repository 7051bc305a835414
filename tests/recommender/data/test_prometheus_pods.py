"""The Prometheus source on pods whose history is easy to misread.

A StatefulSet pod keeps its name across incarnations, so evictions must be told apart
in one series of the pod; a pod may have owners besides its controller, and only the
controller names its workload, as for the live updater; `--match namespace=...` must
select the pod's namespace in both sources when kube-state-metrics' labels are renamed
(scraped without `honor_labels`). Each case carries its own
`cluster` label, so a test reads exactly its series from one backfilled server (30 s
scrapes, 5-min step, six hours).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime

import pandas as pd
import pytest

from recommender.data.prometheus import PrometheusSettings, load_prometheus_history
from recommender.data.promql import LabelNames, QueryNames
from tailor.workloads import pod_workload
from tests.cluster.prometheus import PrometheusFactory, backfill_end

pytestmark = pytest.mark.prometheus

SCRAPE = 30
STEP = 300
END = backfill_end()
START = END - 6 * 3600


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{name}="{value}"' for name, value in labels.items()) + "}"


class OpenMetrics:
    """Samples by family, each family written whole (the format forbids interleaving)."""

    def __init__(self) -> None:
        self.families: dict[str, tuple[str, list[str]]] = {}

    def add(
        self,
        metric: str,
        labels: dict[str, str],
        times: Iterable[int],
        value: Callable[[int], float] | float = 1.0,
    ) -> None:
        kind = "counter" if metric.endswith("_total") else "gauge"
        family = metric.removesuffix("_total") if kind == "counter" else metric
        _, lines = self.families.setdefault(family, (kind, []))
        at_time = value if callable(value) else (lambda _: float(value))
        lines.extend(f"{metric}{_labels(labels)} {at_time(at)!r} {at}" for at in times)

    def text(self) -> str:
        lines = [
            line
            for family, (kind, samples) in self.families.items()
            for line in (f"# TYPE {family} {kind}", *samples)
        ]
        return "\n".join([*lines, "# EOF"]) + "\n"


def scrapes(first: int, last: int) -> range:
    return range(first, last + 1, SCRAPE)


def container(
    history: OpenMetrics, labels: dict[str, str], times: range, cores: float, memory: float
) -> None:
    """cAdvisor's usage and working set of one container, scraped at `times`."""
    cadvisor = {**labels, "image": "img"}
    history.add(
        "container_cpu_usage_seconds_total", cadvisor, times, lambda at: cores * (at - times[0])
    )
    history.add("container_memory_working_set_bytes", cadvisor, times, memory)


def grid_after(at: int) -> int:
    """The first grid point at or after `at`: where a state change first shows."""
    return -(-at // STEP) * STEP


# "evicted": StatefulSet pod web-0 evicted, recreated under its name, evicted again
FIRST_EVICTION = START + 2 * 3600 + 30
SECOND_EVICTION = START + 4 * 3600 + 30
# (uid, first scrape, eviction or None, working set)
INCARNATIONS: list[tuple[str, int, int | None, float]] = [
    ("u1", START, FIRST_EVICTION, 500e6),
    ("u2", FIRST_EVICTION + 120, SECOND_EVICTION, 501e6),
    ("u3", SECOND_EVICTION + 120, None, 502e6),
]


def evicted_from(evicted: int | None) -> Callable[[int], float]:
    """kube_pod_status_reason Evicted: 1 from the eviction on, if any."""
    return lambda at: float(evicted is not None and at >= evicted)


def evicted_twice(history: OpenMetrics) -> None:
    for uid, first, evicted, memory in INCARNATIONS:
        pod = {"cluster": "evicted", "namespace": "db", "pod": "web-0"}
        running = scrapes(first, evicted or END)
        container(
            history, {**pod, "container": "app", "id": f"/kubepods/{uid}"}, running, 0.2, memory
        )
        # a Failed pod stays a minute until its StatefulSet deletes it
        listed = scrapes(first, evicted + 60 if evicted else END)
        reason = {**pod, "uid": uid, "reason": "Evicted"}
        history.add("kube_pod_status_reason", reason, listed, evicted_from(evicted))
        owner = {**pod, "uid": uid, "owner_kind": "StatefulSet", "owner_name": "web"}
        history.add("kube_pod_owner", {**owner, "owner_is_controller": "true"}, listed)


# "owners": pods with a non-controller owner besides their controller, or only one
OWNERS: dict[str, list[tuple[str, str, bool]]] = {
    "api-0": [("StatefulSet", "api", True), ("Application", "billing", False)],
    "web-7d9c8b6f5-abcde": [("ReplicaSet", "web-7d9c8b6f5", True), ("Application", "shop", False)],
    "backup-28845120-xk2p9": [("Job", "backup-28845120", True), ("Application", "ops", False)],
    "adopted-0": [("Application", "billing", False)],
}


def owned(history: OpenMetrics) -> None:
    for pod, owners in OWNERS.items():
        labels = {"cluster": "owners", "namespace": "shop", "pod": pod}
        container(history, {**labels, "container": "app"}, scrapes(START, END), 0.1, 100e6)
        for kind, name, controller in owners:
            owner = {"owner_kind": kind, "owner_name": name}
            flag = {"owner_is_controller": str(controller).lower()}
            history.add(
                "kube_pod_owner", {**labels, "uid": pod, **owner, **flag}, scrapes(START, END)
            )


# "renamed": kube-state-metrics scraped without honor_labels, so the pod's namespace and
# name are exported_namespace / exported_pod, and namespace / pod its own scrape target's
RENAMED = QueryNames(
    state_labels=LabelNames(
        namespace="exported_namespace", pod="exported_pod", container="exported_container"
    )
)
RENAMED_PODS = {"shop": ("web-7d9c8b6f5-abcde", 0.5), "other": ("db-5c6b7d8f9-qwrtz", 0.25)}


def renamed(history: OpenMetrics) -> None:
    times = scrapes(START, END)
    target = {"namespace": "monitoring", "pod": "kube-state-metrics-0", "container": "ksm"}
    for namespace, (pod, request) in RENAMED_PODS.items():
        labels = {"cluster": "renamed", "namespace": namespace, "pod": pod}
        container(history, {**labels, "container": "app"}, times, 0.1, 100e6)
        state = {"cluster": "renamed", **target, "exported_namespace": namespace}
        state["exported_pod"] = pod
        requests = {**state, "exported_container": "app", "resource": "cpu", "unit": "core"}
        history.add("kube_pod_container_resource_requests", requests, times, request)
        owner = {"owner_kind": "ReplicaSet", "owner_name": pod.rsplit("-", 1)[0]}
        history.add("kube_pod_owner", {**state, **owner, "owner_is_controller": "true"}, times)


@pytest.fixture(scope="module")
def server_url(prometheus_server: PrometheusFactory) -> str:
    history = OpenMetrics()
    evicted_twice(history)
    owned(history)
    renamed(history)
    return prometheus_server.start(history.text()).url


def load(url: str, cluster: str, **settings: object) -> tuple[pd.DataFrame, pd.DataFrame]:
    return load_prometheus_history(
        PrometheusSettings.model_validate(
            {
                "url": url,
                "start": datetime.fromtimestamp(START, UTC),
                "end": datetime.fromtimestamp(END, UTC),
                "extra_matchers": {"cluster": cluster},
                "retries": 0,
                **settings,
            }
        )
    )


def test_a_pod_name_evicted_twice_gives_two_evictions_each_with_its_own_memory(
    server_url: str,
) -> None:
    """Both 0 -> 1 edges of the pod's Evicted reason are events; each carries the peak
    of the last window wholly before it, the evicted incarnation's (the window holding
    the eviction also holds its replacement's samples)."""
    _, events = load(server_url, "evicted")
    evicted = events[events["reason"] == "Evicted"]
    found = list(zip(evicted["timestamp"], evicted["memory"], strict=True))
    assert found == [
        (pd.Timestamp(grid_after(FIRST_EVICTION), unit="s", tz="UTC"), 500e6),
        (pd.Timestamp(grid_after(SECOND_EVICTION), unit="s", tz="UTC"), 501e6),
    ]
    assert set(evicted["workload"]) == {"web"} and set(evicted["container"]) == {"app"}


def test_a_pods_workload_is_its_controllers_as_the_updater_names_it(server_url: str) -> None:
    """Its controller, not the alphabetically first owner: a ReplicaSet's Deployment, a
    Job's CronJob; with no controller, the owner there is."""
    usage, _ = load(server_url, "owners")
    found = dict(zip(usage["pod"], usage["workload"], strict=True))
    live = {
        pod: pod_workload(
            {
                "metadata": {
                    "name": pod,
                    "ownerReferences": [
                        {"kind": kind, "name": name, "controller": controller}
                        for kind, name, controller in owners
                    ],
                }
            }
        )
        for pod, owners in OWNERS.items()
    }
    assert (
        found
        == live
        == {
            "api-0": "api",
            "web-7d9c8b6f5-abcde": "web",
            "backup-28845120-xk2p9": "backup",
            "adopted-0": "billing",
        }
    )


@pytest.mark.parametrize("label", ["namespace", "pod"])
def test_match_on_namespace_or_pod_selects_the_pod_in_both_sources_under_renamed_labels(
    server_url: str, label: str, caplog: pytest.LogCaptureFixture
) -> None:
    """`namespace=shop` (or `pod=...`) is matched on each source's label holding the pod's
    namespace (name): kube-state-metrics' `exported_namespace` here, not its scrape
    target's `namespace`, which dropped every request and owner of the selected pods."""
    pod, request = RENAMED_PODS["shop"]
    value = {"namespace": "shop", "pod": pod}[label]
    extra = {"cluster": "renamed", label: value}
    usage, _ = load(server_url, "renamed", names=RENAMED, extra_matchers=extra)
    assert set(usage["pod"]) == {pod}
    assert set(usage["workload"]) == {"web"}
    assert (usage["cpu_request"] == request).all()
    assert "no kube-state-metrics series" not in caplog.text
