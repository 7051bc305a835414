"""Checkpoint export in columns: the JSON writer and the dicts agree with upstream's rules."""

from __future__ import annotations

import math

import numpy as np
import orjson
import pytest

from recommender.vpa.model import VpaModel
from recommender.vpa.settings import ZERO_TIME, VpaSettings
from tailor.api.checkpoint import VerticalPodAutoscalerCheckpointStatus

DAY = 86400
MIDNIGHT = 19675 * DAY  # 2023-11-14T00:00:00Z


def upstream_bucket_weights(weights: np.ndarray, epsilon: float, max_weight: int) -> dict:
    """Upstream's histogram.SaveToChekpoint on one row: from the lowest to the highest
    bucket holding epsilon, weights scaled so the heaviest is max_weight, rounded half
    up, zeros dropped."""
    heavy = [b for b, w in enumerate(weights) if w >= epsilon]
    if not heavy:
        return {}
    ratio = max_weight / max(weights[heavy[0] : heavy[-1] + 1])
    stored = {b: math.floor(weights[b] * ratio + 0.5) for b in range(heavy[0], heavy[-1] + 1)}
    return {str(b): w for b, w in stored.items() if w > 0}


def sparse_model(light: float, seed: int = 3, rows: int = 200) -> VpaModel:
    """Random sparse rows; `light` < 1 makes some cells lighter than epsilon (1e-4)."""
    rng = np.random.default_rng(seed)
    model = VpaModel(np.arange(rows))
    for histograms in (model.cpu, model.memory):
        for row in range(rows):
            cells = rng.choice(histograms.n_buckets, size=rng.integers(0, 40), replace=False)
            scale = rng.choice([1.0, light], cells.size)
            histograms.weights[row, cells] = (rng.exponential(1.0, cells.size) + 1e-3) * scale
        histograms.total[:] = histograms.weights.sum(axis=1)
        histograms.reference[:] = MIDNIGHT + rng.integers(0, 3, rows) * DAY
    model.first_sample[:] = MIDNIGHT
    model.last_sample[:] = MIDNIGHT + rng.integers(0, 10 * DAY, rows)
    model.sample_count[:] = rng.integers(1, 5000, rows)
    return model


@pytest.mark.parametrize("light", [1.0, 1e-6])
def test_stored_weights_are_upstreams(light: float) -> None:
    model = sparse_model(light)
    statuses = model.to_checkpoints(np.arange(200))
    epsilon = model.settings.epsilon
    for row, status in enumerate(statuses):
        for field, histograms in (("cpuHistogram", model.cpu), ("memoryHistogram", model.memory)):
            want = upstream_bucket_weights(histograms.weights[row], epsilon, 10000)
            assert status[field]["bucketWeights"] == want, (row, field)


@pytest.mark.parametrize("light", [1.0, 1e-6])
def test_json_is_orjsons_encoding_of_each_status(light: float) -> None:
    model = sparse_model(light)
    model.first_sample[:3] = ZERO_TIME  # null times
    model.cpu.reference[3] = ZERO_TIME
    model.cpu.total[4:8] = [1e-300, 1e16, 0.1 + 0.2, 123456789.125]  # orjson's float forms
    model.sample_count[8] = 2**40
    rows = np.array([199, *range(0, 150, 3), 7])  # any order, not every row
    export = model.export_checkpoints(rows, now=MIDNIGHT + 12 * DAY)
    documents = export.json()
    statuses = export.statuses()
    assert documents == [orjson.dumps(status) for status in statuses]
    assert [orjson.loads(document) for document in documents] == statuses
    for document in documents[:5]:
        VerticalPodAutoscalerCheckpointStatus.model_validate_json(document)


def test_json_of_every_row_and_of_none() -> None:
    model = sparse_model(1.0)
    export = model.export_checkpoints(np.arange(200))
    assert export.json() == [orjson.dumps(status) for status in export.statuses()]
    empty = model.export_checkpoints(np.array([], dtype=np.int64))
    assert len(empty) == 0 and empty.json() == [] and empty.statuses() == []


def test_empty_histograms_and_large_weight_scale() -> None:
    model = VpaModel(np.arange(3), settings=VpaSettings(checkpoint_max_weight=4_000_000_000))
    model.add_samples(
        np.array([1, 1]),
        np.array([MIDNIGHT, MIDNIGHT + 60]),
        np.array([0.5, 2.0]),
        np.array([3e8, np.nan]),
    )
    export = model.export_checkpoints(np.arange(3))
    documents, statuses = export.json(), export.statuses()
    assert documents == [orjson.dumps(status) for status in statuses]
    assert statuses[0]["cpuHistogram"]["bucketWeights"] == {}
    assert b'"bucketWeights":{}' in documents[0]
    assert max(statuses[1]["cpuHistogram"]["bucketWeights"].values()) == 4_000_000_000


def test_export_does_not_change_with_the_model() -> None:
    model = sparse_model(1.0)
    export = model.export_checkpoints(np.arange(200))
    before = export.json()
    model.add_samples(
        np.array([0]), np.array([MIDNIGHT + 20 * DAY]), np.array([1.0]), np.array([1e9])
    )
    assert export.json() == before
    assert model.export_checkpoints(np.arange(200)).json()[0] != before[0]
