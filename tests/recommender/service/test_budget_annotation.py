"""A VPA's `kube-tailor.io/changes-per-day` sets the forecaster's change budget for its
workloads (the service's schedule), over the flags' and with its own forecast settings."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from recommender.forecast.settings import ForecastSettings
from recommender.service.policies import FORECAST_SET_ANNOTATION, settings_groups
from recommender.service.status import ServedVpa
from tailor.api.vpa import VerticalPodAutoscaler
from tailor.change_budget import CHANGES_PER_DAY
from tests.recommender.service.test_status import vpa


def _annotated(name: str, annotations: dict[str, str]) -> Any:
    document = vpa(name, name, recommenders=[{"name": "kube-tailor"}]).to_api()
    document["metadata"]["annotations"] = annotations
    return VerticalPodAutoscaler.from_api(document)


def test_the_budget_annotation_groups_vpas_by_their_budget() -> None:
    base = ForecastSettings().with_budget(6)
    entries = [
        ServedVpa(_annotated("plain", {})),
        ServedVpa(_annotated("hourly", {CHANGES_PER_DAY: "24"})),
        ServedVpa(_annotated("strict", {CHANGES_PER_DAY: "1"})),
        ServedVpa(
            _annotated(
                "both", {CHANGES_PER_DAY: "24", FORECAST_SET_ANNOTATION: "memory_margin=0.3"}
            )
        ),
        ServedVpa(_annotated("broken", {CHANGES_PER_DAY: "many"})),
    ]
    groups, own = settings_groups(entries, base, FORECAST_SET_ANNOTATION, "forecast")
    named = {settings: sorted(e.vpa.name for e in group) for settings, group in groups.items()}
    hourly = replace(base, max_changes_per_day=24)
    strict = replace(base, max_changes_per_day=1, reserved_changes=0)  # the reserve fits in
    both = replace(hourly, memory_margin=0.3)
    assert named == {base: ["plain"], hourly: ["hourly"], strict: ["strict"], both: ["both"]}
    assert own[("shop", "hourly")].problem is None
    problem = own[("shop", "broken")].problem or ""
    assert problem == f"{CHANGES_PER_DAY}: 'many' is not a whole number"
    assert not any(e.vpa.name == "broken" for group in groups.values() for e in group)
