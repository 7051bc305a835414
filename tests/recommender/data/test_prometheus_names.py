"""A namespace or pod that a Prometheus source is asked to match is no longer than a
Kubernetes name: a 2 MB value is refused before any query, shown cut."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from recommender.data.prometheus_settings import PrometheusSettings


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"extra_matchers": {"namespace": "n" * 64}}, "longer than a Kubernetes namespace"),
        ({"extra_matchers": {"pod": "p" * 2_000_000}}, "longer than a Kubernetes pod name"),
        ({"namespaces": ("shop", "a" * 64)}, "longer than a Kubernetes namespace name"),
    ],
)
def test_names_kubernetes_cannot_hold_are_refused(settings: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words) as raised:
        PrometheusSettings(url="http://127.0.0.1:9", **settings)
    assert len(str(raised.value)) < 2_000  # the value is not echoed whole


def test_the_characters_stay_prometheus_values() -> None:
    """A relabelled source may hold values no API server would: they are matched as given."""
    odd = {"cluster": "Prod EU/1", "namespace": "team.a", "pod": 'we"ird\\pod-0'}
    assert PrometheusSettings(url="http://127.0.0.1:9", extra_matchers=odd).extra_matchers == odd
