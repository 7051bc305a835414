"""A namespace or pod that a Prometheus source is asked to match is a name Kubernetes could
hold: a typo or a 2 MB value is refused before any query, naming the value."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from recommender.data.prometheus_settings import PrometheusSettings


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"extra_matchers": {"namespace": "Shop"}}, "'Shop' is not a namespace name"),
        ({"extra_matchers": {"pod": "p" * 2_000_000}}, "is not a valid Kubernetes name"),
        ({"namespaces": ("shop", "a" * 64)}, "is not a namespace name"),
    ],
)
def test_names_kubernetes_cannot_hold_are_refused(settings: dict[str, object], words: str) -> None:
    with pytest.raises(ValidationError, match=words) as raised:
        PrometheusSettings(url="http://127.0.0.1:9", **settings)
    assert len(str(raised.value)) < 2_000  # the value is not echoed whole


def test_other_labels_keep_prometheus_values() -> None:
    matched = PrometheusSettings(
        url="http://127.0.0.1:9", extra_matchers={"cluster": "Prod EU/1", "namespace": "shop"}
    )
    assert matched.extra_matchers["cluster"] == "Prod EU/1"
