"""How every benchmark reports (JSON on stdout and, with --out, in a file) and times a
whole child process."""

from __future__ import annotations

import json
import resource
import subprocess
import time
from pathlib import Path
from typing import Any


def emit(result: dict[str, Any], out: Path | None) -> None:
    text = json.dumps(result, indent=2)
    print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")


def time_child(command: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of running `command` to its end, its output dropped;
    CPU from the children's rusage, so that everything the process did counts."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall
