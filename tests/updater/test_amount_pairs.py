"""Request pairs read through the shared cache of texts: what an uncached read gives."""

from __future__ import annotations

from typing import Any

import pytest

from tailor.quantity import QuantityError
from updater.resources import amount_pair, requested_pair, resource_list, to_amounts


@pytest.mark.parametrize(
    "values",
    [{"cpu": "250m", "memory": "1Gi"}, {"cpu": "250m"}, {"memory": "1Gi"}, {"cpu": 1},
     {"cpu": "1", "memory": 2**30}, {"cpu": 0.5}, {}],
)  # fmt: skip
def test_a_pair_is_what_the_resource_list_reads(values: dict[str, Any]) -> None:
    for _ in range(2):  # the second read comes from the cache where texts allow
        assert amount_pair(values) == tuple(to_amounts(resource_list(values)))


@pytest.mark.parametrize(
    "values", [{"cpu": True}, {"cpu": {"a": 1}}, {"cpu": None}, {"memory": "lots"}]
)
def test_an_unreadable_amount_is_refused_even_beside_a_cached_text(values: Any) -> None:
    amount_pair({"cpu": "1"})
    amount_pair({"cpu": 1})  # a number equal to True is never kept
    with pytest.raises(QuantityError):
        amount_pair(values)


def test_a_limit_stands_in_for_a_missing_request_and_is_read_for_its_errors() -> None:
    both = {"resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "1Gi"}}}
    assert requested_pair(both) == (100, 2**30)
    bad = {"resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "x"}}}
    with pytest.raises(QuantityError):
        requested_pair(bad)
