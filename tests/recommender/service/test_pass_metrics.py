"""What `tailor recommender` exports of a pass: the HPA conflict count beside the VPA states."""

from __future__ import annotations

from recommender.service.passes import PassReport
from tailor.cli.recommender_service import _PassMetrics
from tailor.telemetry import ServiceTelemetry


def test_vpas_in_conflict_are_counted_and_unknown_when_hpas_were_unreadable() -> None:
    telemetry = ServiceTelemetry("recommender", 300)
    metrics = _PassMetrics(telemetry)

    def conflicts() -> float | None:
        return telemetry.registry.get_sample_value("tailor_recommender_hpa_conflicts")

    report = PassReport(recommended=["shop/web", "shop/api"], hpa_conflicts=["shop/web: HPA"])
    metrics.record(report)
    assert conflicts() == 1
    assert (
        telemetry.registry.get_sample_value("tailor_recommender_vpas", {"state": "recommended"})
        == 2
    )
    metrics.record(PassReport(recommended=["shop/web"], hpas_unread="forbidden"))
    assert conflicts() == 1  # not known this pass: the last known count stays
    metrics.record(PassReport(recommended=["shop/web"]))
    assert conflicts() == 0
