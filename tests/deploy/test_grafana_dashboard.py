"""The Grafana dashboard the chart ships: behind a value, whole in its ConfigMap, and every
series it queries is one the services register (a renamed metric breaks this test, not
the dashboard in a user's Grafana)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.deploy.helm import CHART, Helm, find

PROJECT = Path(__file__).resolve().parents[2]
DASHBOARD = CHART / "dashboards" / "kube-tailor.json"
SERIES_SUFFIXES = ("_total", "_bucket", "_sum", "_count", "_created")


def registered_metric_names() -> set[str]:
    """Every metric name the product's code declares: literal names, and the per-service
    ones `tailor.telemetry` builds as tailor_<component>_<name>."""
    names: set[str] = set()
    for package in ("tailor", "recommender", "updater", "admission"):
        for path in (PROJECT / package).rglob("*.py"):
            text = path.read_text()
            names |= set(re.findall(r'"(tailor_[a-z_]+)"', text))
            for suffix in re.findall(r'f"\{prefix\}_([a-z_]+)"', text):
                names |= {f"tailor_{c}_{suffix}" for c in ("recommender", "updater", "admission")}
    return names


def queried_metric_names(dashboard: dict[str, object]) -> set[str]:
    found: set[str] = set()
    for panel in dashboard["panels"]:  # type: ignore[attr-defined]
        for target in panel["targets"]:
            for name in re.findall(r"\b(tailor_[a-z_]+)", target["expr"]):
                for suffix in SERIES_SUFFIXES:
                    if name.endswith(suffix):
                        name = name.removesuffix(suffix)
                        break
                found.add(name)
    return found


def test_every_queried_metric_is_registered_by_a_service() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queried = queried_metric_names(dashboard)
    assert len(queried) >= 8
    assert queried <= registered_metric_names(), queried - registered_metric_names()


def test_the_dashboard_ships_only_when_enabled(helm: Helm) -> None:
    assert not [o for o in helm.render() if o["metadata"]["name"] == "kube-tailor-dashboard"]
    objects = helm.render("--set", "grafanaDashboard.enabled=true")
    config_map = find(objects, "ConfigMap", "kube-tailor-dashboard")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config_map["data"]["kube-tailor.json"]) == json.loads(DASHBOARD.read_text())
