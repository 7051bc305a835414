"""A query_range answer read as arrays (no server)."""

from __future__ import annotations

import json

import numpy as np

from recommender.data.prometheus_matrix import decode_matrix, matrix_from_result


def answer(result: list[dict]) -> bytes:
    """Laid out as Prometheus writes it: no spaces, status, then data."""
    body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    return json.dumps(body, separators=(",", ":")).encode()


def test_points_come_back_bit_for_bit_with_labels_holding_json_syntax() -> None:
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.lognormal(-2, 3, 50), [0.0, 1e-300, 2.0**62, 5e-324]])
    text = [repr(float(v)) for v in values] + ["NaN", "+Inf", "-Inf"]
    tricky = {"namespace": 'a"],[b', "pod": '"values":[[1,"2"]]}', "container": "c\\"}
    result = [
        {"metric": tricky, "values": [[1_700_000_000 + 300 * i, v] for i, v in enumerate(text)]},
        {"metric": {"namespace": "n"}, "values": [[1_700_000_000.5, "3"]]},
    ]
    matrix = decode_matrix(answer(result))
    assert matrix is not None
    assert matrix.labels == [tricky, {"namespace": "n"}]
    assert matrix.counts.tolist() == [len(text), 1]
    expected = np.array([float(t) for t in text] + [3.0])
    np.testing.assert_array_equal(matrix.values, expected)  # NaN == NaN here
    assert matrix.times[:2].tolist() == [1_700_000_000, 1_700_000_300]
    assert matrix.times[-1] == 1_700_000_000  # 0.5 s off the grid: rounded as before
    generic = matrix_from_result(result)
    np.testing.assert_array_equal(generic.values, matrix.values)
    assert generic.times.tolist() == matrix.times.tolist()


def test_anything_else_is_left_to_the_generic_reader() -> None:
    good = answer([{"metric": {}, "values": [[1, "2"]]}])
    assert decode_matrix(good) is not None
    assert decode_matrix(good.replace(b'"2"', b'"two"')) is None
    assert decode_matrix(good.replace(b'{"status"', b'{ "status"')) is None
    assert decode_matrix(good.replace(b',"values"', b',"histograms"')) is None
    empty = decode_matrix(answer([]))
    assert empty is not None and empty.labels == []
