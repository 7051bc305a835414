"""The schedule as a ConfigMap carries it: compact JSON, gzipped when a fleet outgrows 1 MiB.

`tailor recommender --schedule-configmap` writes it and `tailor follow --schedule-configmap`
reads it. A ConfigMap holds at most 1 MiB; at hourly periods the JSON takes about 4 kB per
container, so past a few hundred containers it goes to `binaryData` gzipped (repeated keys
and times shrink it about tenfold), and the other key is removed so a reader never finds a
stale plan beside the new one.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from collections.abc import Mapping
from typing import Any

from tailor.schedule_file import SCHEDULE_KEY, ScheduleError, ScheduleRow, parse_schedule

SCHEDULE_GZ_KEY = SCHEDULE_KEY + ".gz"  # binaryData: base64 of the gzipped JSON
PLAIN_LIMIT = 900_000  # bytes of JSON kept readable in `data`; leaves room for metadata
CONFIG_MAP_LIMIT = 1_048_576  # what the API server stores in one object


def encode_schedule(records: list[dict[str, Any]]) -> tuple[dict[str, str | None], int]:
    """The ConfigMap's keys to merge (None deletes one; `data` and `binaryData` both carry
    a key, whichever holds the plan), and the bytes it takes. ValueError: too large even
    gzipped, or not JSON (a NaN)."""
    text = json.dumps(records, separators=(",", ":"), allow_nan=False)
    raw = text.encode()
    if len(raw) <= PLAIN_LIMIT:
        return {SCHEDULE_KEY: text, SCHEDULE_GZ_KEY: None}, len(raw)
    packed = base64.b64encode(gzip.compress(raw, mtime=0)).decode("ascii")
    if len(packed) > PLAIN_LIMIT:
        raise ValueError(
            f"the schedule takes {len(packed)} bytes gzipped, over a ConfigMap's "
            f"{CONFIG_MAP_LIMIT}: serve fewer namespaces per recommender (-n)"
        )
    return {SCHEDULE_KEY: None, SCHEDULE_GZ_KEY: packed}, len(packed)


def decode_schedule(keys: Mapping[str, str], where: str) -> list[ScheduleRow]:
    """The validated rows of a ConfigMap's data and binaryData (merged), or ScheduleError."""
    if SCHEDULE_GZ_KEY in keys:
        try:
            text = gzip.decompress(base64.b64decode(keys[SCHEDULE_GZ_KEY], validate=True))
            return parse_schedule(text.decode("utf-8"), where)
        except (binascii.Error, OSError, EOFError, UnicodeDecodeError) as error:
            raise ScheduleError(
                f"{where}: {SCHEDULE_GZ_KEY} is not gzipped JSON: {error}"
            ) from None
    if SCHEDULE_KEY not in keys:
        raise ScheduleError(f"{where} has no key {SCHEDULE_KEY} or {SCHEDULE_GZ_KEY}")
    return parse_schedule(keys[SCHEDULE_KEY], where)
