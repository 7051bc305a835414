"""VpaModel refuses input it cannot take (VpaInputError) and is left unchanged."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from recommender.overrides import SettingsError
from recommender.vpa.ingest import VpaInputError
from recommender.vpa.model import VpaModel
from recommender.vpa.settings import VpaSettings

MIDNIGHT = 19675 * 86400
A = np.array


def _model() -> VpaModel:
    model = VpaModel(A([0, 0, 1]), 2)
    times = MIDNIGHT + np.arange(10) * 60
    for series in range(3):
        model.add_samples(np.full(10, series), times, np.full(10, 0.5), np.full(10, 4e8))
    return model


def _state(model: VpaModel) -> list[object]:
    return [*model.to_checkpoints(np.arange(2)), model.peaks.oom_peak.tolist()]


T = A([MIDNIGHT + 900])
BAD_CALLS: dict[str, tuple[Callable[[VpaModel], object], str]] = {
    "inf cpu": (lambda m: m.add_samples(A([0]), T, A([np.inf]), A([1e8])), "cpu must be"),
    "negative cpu": (
        lambda m: m.add_samples(A([0]), T, A([-1.0]), A([1e8])),
        "cpu must be",
    ),
    "inf memory": (
        lambda m: m.add_samples(A([0]), T, A([0.5]), A([np.inf])),
        "memory must",
    ),
    "negative memory": (
        lambda m: m.add_samples(A([0]), T, A([0.5]), A([-1.0])),
        "memory",
    ),
    "NaN time": (
        lambda m: m.add_samples(A([0]), A([np.nan]), A([0.5]), A([1e8])),
        "finite UNIX",
    ),
    "fractional series": (
        lambda m: m.add_samples(A([0.7]), T, A([0.5]), A([1e8])),
        "whole numbers",
    ),
    "window inf": (lambda m: m.add_window(MIDNIGHT + 900, A([np.inf] * 3), A([1e8] * 3)), "cpu"),
    "oom series 7": (lambda m: m.add_oom(A([7]), T, A([1e9])), "out of range"),
    "oom series -1": (lambda m: m.add_oom(A([-1]), T, A([1e9])), "out of range"),
    "oom inf request": (lambda m: m.add_oom(A([0]), T, A([np.inf])), "memory_request"),
    "oom negative request": (lambda m: m.add_oom(A([0]), T, A([-5e9])), "memory_request"),
    "checkpoint -1": (lambda m: m.to_checkpoints(A([-1])), "out of range"),
    "checkpoint 2": (lambda m: m.to_checkpoints(A([2])), "out of range"),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_input_is_refused_and_changes_nothing(name: str) -> None:
    """Before: inf usage recommended 1000+ cores, a negative one was dropped unnoticed, a
    fractional series index was truncated, index -1 meant the last series or aggregate,
    an out-of-range OOM series was an IndexError and a NaN time an OverflowError."""
    call, message = BAD_CALLS[name]
    model = _model()
    before = _state(model)
    with pytest.raises(VpaInputError, match=message):
        call(model)
    assert _state(model) == before


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ([0.5], "whole numbers"),
        ([0, 1.5], "whole numbers"),
        ([0, np.nan], "whole numbers"),
        ([True, False], "must be numbers, got bool"),
        (["0", "1"], "must be numbers"),
        ([0, -1], ">= 0"),
        ([[0, 1]], "one-dimensional"),
    ],
)
def test_a_series_to_aggregate_that_is_not_whole_indices_is_refused(
    mapping: object, message: str
) -> None:
    """[0.5] used to be truncated to aggregate 0 and [True] read as 1, without a word."""
    with pytest.raises(VpaInputError, match=message):
        VpaModel(np.asarray(mapping))


def test_whole_float_aggregate_indices_are_taken_as_series_indices_are() -> None:
    model = VpaModel(A([0.0, 1.0, 1.0]))
    assert model.series_to_aggregate.dtype == np.int64
    assert model.series_to_aggregate.tolist() == [0, 1, 1]
    assert model.n_aggregates == 2
    with pytest.raises(VpaInputError, match="n_aggregates is smaller"):
        VpaModel(A([0, 3]), 2)


def test_nan_containers_per_pod_is_refused() -> None:
    """It used to give all-zero recommendations."""
    with pytest.raises(ValueError, match="containers_per_pod"):
        _model().recommend(A([1.0, np.nan]))


def test_nan_usage_and_nan_request_still_mean_missing() -> None:
    model = _model()
    model.add_samples(A([0]), T, A([np.nan]), A([np.nan]))
    model.add_oom(A([0]), T, A([np.nan]))  # no request: used = the interval's peak
    assert model.peaks.oom_peak[0] > 4e8


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"target_percentile": 0.0}, "target_percentile must lie in (0, 1]"),
        ({"upper_percentile": float("nan")}, "upper_percentile must be finite"),
        ({"cpu_half_life": 0.4}, "half-lives must be at least 1 second"),
        ({"memory_half_life": float("inf")}, "memory_half_life must be finite"),
        ({"safety_margin": -0.5}, "safety_margin cannot be negative"),
        ({"safety_margin": "0.1"}, "safety_margin must be a number"),
        ({"bucket_growth": float("nan")}, "bucket_growth must be finite"),
        ({"memory_max_value": float("inf")}, "memory_max_value must be finite"),
        ({"cpu_max_value": 0.001}, "cpu_first_bucket < cpu_max_value"),
        ({"max_decay_exponent": 0}, "max_decay_exponent must be between 1 and 500"),
        ({"max_decay_exponent": 1100}, "max_decay_exponent must be between 1 and 500"),
        ({"cpu_sample_weight": -1.0}, "sample weights must be positive"),
        ({"epsilon": -1.0}, "epsilon must be positive"),
        ({"epsilon": 0.0}, "epsilon must be positive"),
        ({"pod_min_cpu": -1.0}, "pod minimums cannot be negative"),
        ({"oom_bump_ratio": 0.5}, "oom_bump_ratio must be at least 1"),
        ({"checkpoint_max_weight": 0}, "checkpoint_max_weight must be at least 1"),
        ({"cpu_round_millicores": 1.5}, "cpu_round_millicores must be a whole number"),
        ({"memory_interval": 1.5}, "memory_interval must be a whole number"),
    ],
)
def test_nonsense_settings_are_refused(settings: dict[str, Any], message: str) -> None:
    """Before: accepted (NaN, inf or a 0.4 s half-life as a ValueError from deep inside, or
    no error at all and a silently different model)."""
    with pytest.raises(SettingsError, match=re.escape(message)):
        VpaSettings(**settings)
