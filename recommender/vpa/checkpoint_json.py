"""VerticalPodAutoscalerCheckpoint statuses written as JSON straight from their columns.

Hand-written because no library writes JSON from columns: orjson and the standard
library encode Python objects, and building those (about 50,000 dicts holding
300,000 bucket entries for 10,000 aggregates) costs several times what encoding
them does. The output is byte-identical to `orjson.dumps` of each status dict: keys
in the same order, and floats and integers as orjson writes them (orjson writes
those columns).

Every piece of text is written left-aligned in a slot of whole 8-byte words,
padded with NUL bytes, which JSON text never holds. A document is a run of rows of
equal width: its head, one row per CPU cell (bucket key, weight), its middle, one
row per memory cell, its tail. One `take` puts the rows of all documents in order,
and dropping every NUL byte of the result gives the text.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np
import orjson

from recommender.vpa.checkpoint_codec import CHECKPOINT_VERSION, format_time
from recommender.vpa.settings import ZERO_TIME

if TYPE_CHECKING:
    from recommender.vpa.checkpoint_export import CheckpointExport, HistogramColumns

#: Largest weight whose digits come from a table built once (upstream's weights top
#: out at 10000); above it the digits of each distinct weight are written per export.
_DIGIT_TABLE_LIMIT = 100_000

Field = tuple[np.ndarray, np.ndarray]
"""A column of texts: (n, words) uint64 holding NUL-padded bytes, and each length."""


def _words(length: int) -> int:
    return max(1, -(-length // 8))


def _field(texts: list[bytes], words: int | None = None) -> Field:
    words = words or _words(max(map(len, texts), default=1))
    array = np.array(texts, dtype=f"S{8 * words}")
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return array.view(np.uint64).reshape(len(texts), words), lengths


def _constant(text: bytes, n: int) -> Field:
    words, lengths = _field([text])
    return np.broadcast_to(words, (n, words.shape[1])), np.broadcast_to(lengths, (n,))


def _numbers(values: np.ndarray) -> Field:
    """Numbers as orjson writes them: orjson encodes the column, split at the commas."""
    return _field(orjson.dumps(values.tolist())[1:-1].split(b","))


def _times(seconds: np.ndarray) -> Field:
    """Each time as JSON: a "2006-01-02T15:04:05Z" string (each distinct time formatted
    once), null for the zero time."""
    distinct, inverse = np.unique(seconds, return_inverse=True)
    text = np.datetime_as_string(distinct.astype("datetime64[s]"), unit="s").tolist()
    table = [
        b"null" if t == ZERO_TIME else b'"%sZ"' % s.encode()
        for t, s in zip(distinct.tolist(), text, strict=True)
    ]
    words, lengths = _field(table)
    return words[inverse], lengths[inverse]


@cache
def _key_table(n_buckets: int) -> Field:
    """Keys `"b":`, then `,"b":` (a cell after its row's first)."""
    first = [b'"%d":' % b for b in range(n_buckets)]
    return _field(first + [b"," + key for key in first], _words(len(b',"%d":' % n_buckets)))


@cache
def _digit_table(max_weight: int) -> Field:
    return _field([b"%d" % w for w in range(max_weight + 1)])


def _digits(weights: np.ndarray, max_weight: int) -> Field:
    if max_weight <= _DIGIT_TABLE_LIMIT:
        table, lengths = _digit_table(max_weight)
        return table[weights], lengths[weights]
    distinct, inverse = np.unique(weights, return_inverse=True)
    table, lengths = _field([b"%d" % w for w in distinct.tolist()])
    return table[inverse], lengths[inverse]


def _cells(histogram: HistogramColumns) -> tuple[Field, Field]:
    """Each cell's key and weight, and their lengths."""
    keys, key_lengths = _key_table(histogram.n_buckets)
    rows = np.repeat(np.arange(histogram.bounds.size - 1), np.diff(histogram.bounds))
    later = np.arange(histogram.buckets.size) != histogram.bounds[rows]
    key = histogram.buckets + histogram.n_buckets * later
    return (keys[key], key_lengths[key]), _digits(histogram.weights, histogram.max_weight)


class _Layout:
    """Blocks of rows of `width` words, so many rows per document, put in order."""

    def __init__(self, n: int, width: int) -> None:
        self.width = width
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, rows per document)
        self.lengths = np.zeros(n, dtype=np.int64)

    def add(self, fields: list[Field]) -> None:
        """Fields side by side, the same for each document, cut into rows."""
        words = np.concatenate([words for words, _ in fields], axis=1)
        n, used = words.shape
        padded = -(-used // self.width) * self.width
        if padded != used:
            words = np.concatenate([words, np.zeros((n, padded - used), dtype=np.uint64)], axis=1)
        self.blocks.append((words.reshape(-1, self.width), np.full(n, padded // self.width)))
        self.lengths += sum(lengths for _, lengths in fields)

    def add_cells(self, bounds: np.ndarray, key: Field, digits: Field) -> None:
        """One row per cell, `bounds[d]:bounds[d + 1]` being document d's."""
        rows = np.zeros((key[0].shape[0], self.width), dtype=np.uint64)
        rows[:, : key[0].shape[1]] = key[0]
        rows[:, key[0].shape[1] : key[0].shape[1] + digits[0].shape[1]] = digits[0]
        counts = np.diff(bounds)
        self.blocks.append((rows, counts))
        document = np.repeat(np.arange(counts.size), counts)
        cell_lengths = key[1] + digits[1]
        self.lengths += np.bincount(document, cell_lengths, minlength=counts.size).astype(np.int64)

    def text(self) -> tuple[bytes, np.ndarray, np.ndarray]:
        """The text, and where each document starts (after its separator) and ends
        (the last one's length leaves out the array's closing bracket)."""
        per_document = np.sum([counts for _, counts in self.blocks], axis=0)
        start = np.cumsum(per_document) - per_document
        source = np.empty(int(per_document.sum()), dtype=np.int64)
        offset = 0
        for _, counts in self.blocks:
            document = np.repeat(np.arange(counts.size), counts)
            first = np.cumsum(counts) - counts
            at = (start - first)[document] + np.arange(document.size)
            source[at] = np.arange(offset, offset + document.size)
            start = start + counts
            offset += document.size
        rows = np.take(np.concatenate([rows for rows, _ in self.blocks]), source, axis=0)
        text = rows.view(np.uint8).reshape(-1)
        ends = np.cumsum(self.lengths)
        return text[text != 0].tobytes(), ends - self.lengths + 1, ends


def write_documents(export: CheckpointExport) -> tuple[bytes, np.ndarray, np.ndarray]:
    """All statuses as one JSON array, and where each one's document starts and ends."""
    n = len(export)
    cpu_key, cpu_digits = _cells(export.cpu)
    memory_key, memory_digits = _cells(export.memory)
    width = max(
        cpu_key[0].shape[1] + cpu_digits[0].shape[1],
        memory_key[0].shape[1] + memory_digits[0].shape[1],
    )
    updated = orjson.dumps(None if export.updated is None else format_time(export.updated))
    layout = _Layout(n, width)
    layout.add(
        [
            _field([b"[", *[b","] * (n - 1)]),
            _constant(
                b'{"lastUpdateTime":%s,"version":"%s","cpuHistogram":{"referenceTimestamp":'
                % (updated, CHECKPOINT_VERSION.encode()),
                n,
            ),
            _times(export.cpu.reference),
            _constant(b',"bucketWeights":{', n),
        ]
    )
    layout.add_cells(export.cpu.bounds, cpu_key, cpu_digits)
    layout.add(
        [
            _constant(b'},"totalWeight":', n),
            _numbers(export.cpu.total),
            _constant(b'},"memoryHistogram":{"referenceTimestamp":', n),
            _times(export.memory.reference),
            _constant(b',"bucketWeights":{', n),
        ]
    )
    layout.add_cells(export.memory.bounds, memory_key, memory_digits)
    closing = _field([*[b"}"] * (n - 1), b"}]"])[0], np.ones(n, dtype=np.int64)
    layout.add(
        [
            _constant(b'},"totalWeight":', n),
            _numbers(export.memory.total),
            _constant(b'},"firstSampleStart":', n),
            _times(export.first_sample),
            _constant(b',"lastSampleStart":', n),
            _times(export.last_sample),
            _constant(b',"totalSamplesCount":', n),
            _numbers(export.sample_count),
            closing,
        ]
    )
    return layout.text()
