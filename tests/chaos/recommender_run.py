"""What the recommender's chaos cases share: a served VPA over a real Prometheus's history,
the service's /metrics and /health-check, and its log read line by line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from recommender.data.openmetrics import usage_to_openmetrics
from tests.cluster.crds import install_crds
from tests.cluster.fixtures import FullNamespace
from tests.cluster.prometheus import PrometheusFactory, PrometheusInstance, backfill_end
from tests.cluster.rawapi import Json
from tests.cluster.waiting import wait_until
from tests.cluster.workloads import create_deployment, daily_cycle, deployment, vpa, vpa_collection


@dataclass(frozen=True)
class Served:
    """VPA `web` of Deployment `web`, which names kube-tailor, and Prometheus's history."""

    namespace: str
    prometheus: PrometheusInstance

    @property
    def vpa_path(self) -> str:
        return f"{vpa_collection(self.namespace)}/web"


def serve_web(full: FullNamespace, prometheus: PrometheusFactory) -> Served:
    api, namespace = full.api, full.name
    instance = prometheus.start(usage_to_openmetrics(daily_cycle(namespace, backfill_end())))
    install_crds(api)
    node = f"chaos-{namespace}"
    full.sim.register_node(node, cpu="8", memory="16Gi", labels={"tailor-test": node})
    create_deployment(api, namespace, deployment("web", node))
    api.create(vpa_collection(namespace), vpa("web", "web", recommender="kube-tailor"))
    wait_until(
        lambda: api.get(f"/api/v1/namespaces/{namespace}/pods")["items"], timeout=30, what="pod"
    )
    return Served(namespace, instance)


def metric(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return None


def mean_pass_seconds(metrics_text: str) -> float:
    total = metric(metrics_text, "tailor_recommender_pass_duration_seconds_sum") or 0.0
    count = metric(metrics_text, "tailor_recommender_pass_duration_seconds_count") or 0.0
    return total / count if count else float("nan")


class Log:
    """A service's log, read from where the last look stopped."""

    def __init__(self, path: Path) -> None:
        self.path, self.seen = path, 0

    def lines(self) -> list[str]:
        return self.path.read_text(errors="replace").splitlines()

    def next_with(self, words: str) -> str | None:
        """The first line after the last one found that holds `words` (None: none yet)."""
        lines = self.lines()
        for index in range(self.seen, len(lines)):
            if words in lines[index]:
                self.seen = index + 1
                return lines[index]
        return None

    def count(self, words: str) -> int:
        return sum(words in line for line in self.lines())


def recommendation(status: Json | None) -> Json | None:
    return (status or {}).get("recommendation")
