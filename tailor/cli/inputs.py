"""Where a command's usage history comes from: the demo fleet, files or a dataset.

Every command that reads history accepts the same flags; this module turns
them into the canonical (usage, events) pair or a clear `typer.BadParameter`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import typer
from pydantic import ValidationError
from rich.console import Console

from recommender.data.files import read_events, read_usage
from recommender.data.prometheus_settings import (
    EmptyHistoryError,
    PrometheusSettings,
    PrometheusSourceError,
)
from recommender.data.promql import QueryNames, check_extra_matcher
from recommender.data.schema import DataFormatError, empty_events
from recommender.data.synthetic import demo_fleet
from recommender.overrides import SettingsError, settings_with, validation_text
from tailor.cli.errors import DataError
from tailor.cli.progress import progress_bar
from tailor.durations import DurationError, parse_duration
from tailor.memory_pressure import PressureRule

DATASETS = ("bitbrains", "azure", "google2011")


def one_source(sources: dict[str, object]) -> None:
    """Refuse none or several of a command's history sources (flag spelling -> given?)."""
    chosen = [flag.split()[0] for flag, given in sources.items() if given]
    if len(chosen) != 1:
        names = list(sources)
        raise typer.BadParameter(
            f"name exactly one history source: {', '.join(names[:-1])} or {names[-1]}"
            + (f" (got {', '.join(chosen)})" if chosen else "")
        )


def known_dataset(dataset: str) -> None:
    """Refuse a dataset name we have no loader for, listing the known ones."""
    if dataset not in DATASETS:
        raise typer.BadParameter(
            f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}",
            param_hint="--dataset",
        )


def load_history(
    demo: bool,
    input: Path | None,
    events: Path | None,
    dataset: str | None,
    dataset_options: dict[str, Any] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exactly one source must be named; events only go with --input."""
    one_source({"--demo": demo, "--input FILE": input is not None, "--dataset NAME": dataset})
    if events is not None and input is None:
        raise typer.BadParameter("--events goes with --input")
    try:
        if demo:
            return demo_fleet()
        if dataset is not None:
            known_dataset(dataset)
            from recommender.data.traces import load_dataset  # the trace readers: pyarrow

            try:
                return load_dataset(dataset, **(dataset_options or {})), empty_events()
            except DataFormatError:
                raise  # a malformed file of the dataset: the data's fault, not the flag's
            except ValueError as err:  # the loaders' documented error: no files selected, ...
                raise typer.BadParameter(str(err), param_hint="--dataset") from err
        assert input is not None
        if input.is_dir():
            raise typer.BadParameter(f"{input}: is a directory, not a file")
        if not input.is_file():
            raise typer.BadParameter(f"{input}: no such file")
        usage = read_usage(input)
        event_frame = read_events(events) if events is not None else empty_events()
        return usage, event_frame
    except (DataFormatError, OSError) as err:
        raise DataError(str(err)) from err


def only_namespaces(
    usage: pd.DataFrame, events: pd.DataFrame, namespaces: list[str] | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Keep the series of `namespaces` (all when none are named), as Prometheus' query does.

    A file or the demo fleet used to ignore `--namespace` and answer for every namespace;
    naming only namespaces the history lacks is an error, like Prometheus' empty result.
    """
    if not namespaces:
        return usage, events
    kept = usage[usage["namespace"].isin(namespaces)]
    if kept.empty:
        present = sorted(usage["namespace"].unique())
        shown = ", ".join(present[:10]) + (", ..." if len(present) > 10 else "")
        raise typer.BadParameter(
            f"no series in namespace {', '.join(namespaces)} (the history has: {shown})",
            param_hint="--namespace",
        )
    chosen = events[events["namespace"].isin(namespaces)]
    return kept.reset_index(drop=True), chosen.reset_index(drop=True)


@dataclass(frozen=True)
class PrometheusOptions:
    """The --prometheus family of flags, as typed."""

    url: str
    history: str = "8d"
    step: str = "5m"
    chunk: str | None = None  # None: the source's default for the step
    namespaces: tuple[str, ...] = ()
    matchers: tuple[str, ...] = ()
    token_file: Path | None = None
    insecure: bool = False
    names: tuple[str, ...] = ()  # --prometheus-set NAME=VALUE: renamed metrics and labels
    username: str | None = None  # basic auth; the password from a file or PROMETHEUS_PASSWORD
    password_file: Path | None = None
    pressure: PressureRule = field(default_factory=PressureRule)  # what a pressure episode is


def query_names(pairs: tuple[str, ...]) -> QueryNames:
    """The metric and label names `--prometheus-set` gives (`labels.pod=pod_name`, ...)."""
    try:
        return settings_with(pairs, QueryNames(), "prometheus")
    except SettingsError as err:
        raise typer.BadParameter(str(err), param_hint="--prometheus-set") from err


def prometheus_settings(options: PrometheusOptions) -> PrometheusSettings:
    """Validate the flags into source settings; every problem is a BadParameter."""
    names = query_names(options.names)
    extra: dict[str, str] = {}
    for item in options.matchers:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise typer.BadParameter(f"--match wants NAME=VALUE, got {item!r}")
        name = name.strip()
        try:  # before the settings: the answer names the flag, not a field
            check_extra_matcher(name, names)
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--match") from err
        if name in extra:  # a dict kept only the last, so the query ignored the first
            raise typer.BadParameter(
                f"--match {name} given twice ({extra[name]!r} and {value!r}): "
                "a series has one value per label"
            )
        extra[name] = value
    token = None
    if options.token_file is not None:
        try:
            token = options.token_file.read_text().strip()
        except OSError as err:
            raise typer.BadParameter(f"--bearer-token-file: {err}") from err
        if not token or len(token.split()) != 1:  # else "Bearer " or a header requests refuses
            raise typer.BadParameter(
                f"--bearer-token-file {options.token_file}: "
                + ("is empty" if not token else "holds more than one word; want the token alone")
            )
    password = _password(options)
    try:
        chunk = {} if options.chunk is None else {"chunk": parse_duration(options.chunk)}
        return PrometheusSettings(
            url=options.url,
            history=parse_duration(options.history),
            step=parse_duration(options.step),
            **chunk,
            namespaces=options.namespaces,
            names=names,
            extra_matchers=extra,
            bearer_token=token,
            username=options.username,
            password=password,
            verify_tls=not options.insecure,
            memory_pressure=options.pressure,
        )
    except DurationError as err:
        raise typer.BadParameter(str(err)) from err
    except ValidationError as err:
        raise typer.BadParameter(validation_text(err)) from err


def _password(options: PrometheusOptions) -> str | None:
    """Basic auth's password: `--prometheus-password-file`, else PROMETHEUS_PASSWORD (as
    upstream's recommender reads it), never a flag (a command line is seen by `ps`)."""
    if options.password_file is not None:
        if options.username is None:
            raise typer.BadParameter(
                "goes with --prometheus-username", param_hint="--prometheus-password-file"
            )
        try:
            text = options.password_file.read_text().rstrip("\n")
        except OSError as err:
            raise typer.BadParameter(str(err), param_hint="--prometheus-password-file") from err
        if not text:
            raise typer.BadParameter(
                f"{options.password_file} is empty", param_hint="--prometheus-password-file"
            )
        return text
    if options.username is None:
        return None
    from_env = os.environ.get("PROMETHEUS_PASSWORD")
    if not from_env:
        raise typer.BadParameter(
            "needs a password: --prometheus-password-file FILE or PROMETHEUS_PASSWORD",
            param_hint="--prometheus-username",
        )
    return from_env


def load_from_prometheus(
    options: PrometheusOptions, console: Console
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read history chunk by chunk, with a progress bar on a terminal."""
    return load_with_settings(prometheus_settings(options), console)


def load_with_settings(
    settings: PrometheusSettings, console: Console
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`load_from_prometheus` for settings made already (a Prometheus found in a cluster)."""
    # the HTTP stack (requests, prometheus-api-client) only for a command that reads
    from recommender.data.prometheus import load_prometheus_history

    progress = progress_bar(console)
    with progress:
        task = progress.add_task("querying Prometheus", total=None)
        try:
            return load_prometheus_history(
                settings,
                progress=lambda done, total: progress.update(task, completed=done, total=total),
            )
        except EmptyHistoryError as err:
            hint = " (a renamed one is set with --prometheus-set, e.g. labels.pod=pod_name)"
            raise typer.BadParameter(str(err) + hint, param_hint="--prometheus") from err
        except PrometheusSourceError as err:
            raise typer.BadParameter(str(err), param_hint="--prometheus") from err
