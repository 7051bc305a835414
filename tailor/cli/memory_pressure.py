"""`tailor follow --memory-pressure-prometheus URL`: the flags of the memory-pressure
reaction, and each pass's read of Prometheus (the edge `updater.pressure` is fed from).

A Prometheus that does not answer costs the reaction one pass, never the pass: the pods
are still followed, and the log says what was not read. The Prometheus client is imported
only when the flag is given: `tailor follow` without it starts as fast as before.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError

from tailor.cli.service import duration_flag
from tailor.memory_pressure import (
    STALLED_SHARE,
    WINDOW,
    PressureReading,
    PressureRule,
    PressureRuleError,
)
from updater.pressure import ContainerKey, MemoryPressure

if TYPE_CHECKING:
    from recommender.data.prometheus_settings import PrometheusSettings

__all__ = ["MemoryPressure", "memory_pressure_flags", "pressure_rule"]

LOG = logging.getLogger("tailor.follow")

PressurePrometheus = Annotated[
    str | None,
    typer.Option(
        help="Raise the memory of containers under sustained memory pressure (PSI) at once, "
        "before the OOM kill, read from this Prometheus.",
    ),
]
PressureStalled = Annotated[
    float,
    typer.Option(
        help="With --memory-pressure-prometheus: the share of time all of a container's "
        "tasks stalled on memory (PSI full) that calls for more.",
    ),
]
PressureWindow = Annotated[
    str, typer.Option(help="With --memory-pressure-prometheus: averaged over this long.")
]
DEFAULT_WINDOW = f"{int(WINDOW.total_seconds() // 60)}m"
DEFAULT_STALLED = STALLED_SHARE
# the recommender's side: the rule its history reads episodes back with (the updater's)
HistoryStalled = Annotated[
    float,
    typer.Option(
        "--memory-pressure-stalled",
        help="The share of time all of a container's tasks stalled on memory (PSI full) "
        "that the history reads back as an OOM-like episode; give the updater's value.",
    ),
]
HistoryWindow = Annotated[
    str,
    typer.Option(
        "--memory-pressure-window",
        help="The stalled share is averaged over this long; give the updater's value.",
    ),
]


def pressure_rule(stalled: float, window: str) -> PressureRule:
    """The rule the flags give; bad values exit 2 naming the flag."""
    span = duration_flag(window, "--memory-pressure-window", "1s")
    try:
        return PressureRule(stalled_share=stalled, window=span)
    except PressureRuleError as error:
        raise typer.BadParameter(str(error), param_hint="--memory-pressure-stalled") from None


@dataclass(frozen=True)
class _Reader:
    settings: PrometheusSettings
    rule: PressureRule

    def __call__(self) -> Mapping[ContainerKey, PressureReading]:
        from recommender.data.prometheus_pressure import read_memory_pressure
        from recommender.data.prometheus_settings import PrometheusSourceError

        try:
            return read_memory_pressure(self.settings, self.rule)
        except PrometheusSourceError as error:
            LOG.warning("memory pressure not read this pass: %s", error)
            return {}


def memory_pressure_flags(url: str | None, stalled: float, window: str) -> MemoryPressure | None:
    """The reaction the flags ask for (None without a URL); bad values exit 2."""
    if url is None:
        given = {"--memory-pressure-stalled": stalled != DEFAULT_STALLED,
                 "--memory-pressure-window": window != DEFAULT_WINDOW}  # fmt: skip
        stray = [flag for flag, set_ in given.items() if set_]
        if stray:
            raise typer.BadParameter(
                "goes with --memory-pressure-prometheus URL", param_hint=", ".join(stray)
            )
        return None
    if "://" not in url:  # host:9090 reached requests as a scheme "host"
        raise typer.BadParameter(
            f"{url!r} is not a URL; did you mean http://{url}?",
            param_hint="--memory-pressure-prometheus",
        )
    rule = pressure_rule(stalled, window)
    from recommender.data.prometheus_settings import PrometheusSettings

    try:
        settings = PrometheusSettings(url=url, retries=0, timeout_seconds=10.0)
    except ValidationError as error:
        message = error.errors()[0]["msg"]
        raise typer.BadParameter(message, param_hint="--memory-pressure-prometheus") from None
    return MemoryPressure(rule, _Reader(settings, rule))
