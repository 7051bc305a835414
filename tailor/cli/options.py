"""Flags shared by every command that reads usage history, declared once.

`recommend` and `schedule` take the same history sources (demo fleet, files or
Prometheus); the annotated aliases below keep their help and defaults identical,
and `read_history` turns them into the canonical (usage, events) pair.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, TypeVar

import pandas as pd
import typer
from rich.console import Console

from recommender.data.arrays import SamplePeriodError
from recommender.data.ooms import OOM_LIKE, unmatched_oom_kills
from recommender.forecast.settings import ForecastSettings
from recommender.overrides import SettingsError, settings_with
from recommender.recommend import recommend_forecast_workloads
from recommender.vpa.settings import VpaSettings
from tailor.change_budget import DEFAULT_CHANGES_PER_DAY
from tailor.cli.inputs import (
    PrometheusOptions,
    load_from_prometheus,
    load_history,
    one_source,
    only_namespaces,
)
from tailor.cli.scope_flags import Namespace as Namespace
from tailor.cli.writing import special_file
from tailor.durations import parse_duration

FormatT = TypeVar("FormatT", bound=StrEnum)

Demo = Annotated[bool, typer.Option("--demo", help="Use the built-in sample fleet.")]
Input = Annotated[
    Path | None, typer.Option("--input", help="Usage history (.csv, .csv.gz, .parquet).")
]
Events = Annotated[Path | None, typer.Option("--events", help="OOM / eviction events file.")]
Prometheus = Annotated[
    str | None, typer.Option("--prometheus", help="Prometheus base URL to read history from.")
]
HISTORY_DEFAULT = "8d"
STEP_DEFAULT = "5m"
History = Annotated[str, typer.Option(help="With --prometheus: how far back.")]
Step = Annotated[str, typer.Option(help="With --prometheus: sample period.")]
Chunk = Annotated[
    str | None,
    typer.Option(help="With --prometheus: range per query [default: 1d, less for steps under 8s]."),
]
Match = Annotated[
    list[str] | None,
    typer.Option("--match", help="Extra label matcher NAME=VALUE for every query."),
]
TokenFile = Annotated[
    Path | None, typer.Option("--bearer-token-file", help="Bearer token for Prometheus.")
]
Insecure = Annotated[bool, typer.Option("--insecure", help="Skip TLS verification of Prometheus.")]
PrometheusUsername = Annotated[
    str | None,
    typer.Option(
        "--prometheus-username",
        envvar="PROMETHEUS_USERNAME",
        help="With --prometheus: basic auth as this user (password: --prometheus-password-file "
        "or PROMETHEUS_PASSWORD).",
    ),
]
PrometheusPasswordFile = Annotated[
    Path | None,
    typer.Option("--prometheus-password-file", help="Basic auth's password, read from a file."),
]
PrometheusSet = Annotated[
    list[str] | None,
    typer.Option(
        "--prometheus-set",
        help="With --prometheus: a renamed metric or label, NAME=VALUE "
        "(labels.pod=pod_name, state_labels.namespace=exported_namespace, "
        "metrics.memory_working_set=container_memory_rss; repeatable).",
    ),
]


FORMAT_HELP = "Output format (default: the --output suffix's, else table)."


def output_path(text: str) -> Path:
    """An output flag's text as a path; an empty name used to become "." and be called a
    folder."""
    if not text.strip():
        raise typer.BadParameter("an empty file name; give a file")
    return Path(text)


def output_format(
    given: FormatT | None,
    default: FormatT,
    output: Path | None,
    by_suffix: Mapping[str, FormatT],
    flag: str = "--output",
) -> FormatT:
    """The format to write: `--format` when given, else the one the output file's suffix
    names (plan.json is JSON), else `default`. A suffix this command writes no format for,
    or one that contradicts `--format`, is refused before any work: `-o plan.json` used to
    get a rich table. A name without a suffix, or a device such as /dev/stdout, takes the
    format as given."""
    if output is None or not output.suffix or special_file(output):
        return default if given is None else given
    suffix = output.suffix.lower()
    implied = by_suffix.get(suffix)
    if implied is None:
        raise typer.BadParameter(
            f"{output}: unknown suffix {suffix!r}; use {', '.join(by_suffix)}", param_hint=flag
        )
    if given is not None and given != implied:
        raise typer.BadParameter(
            f"{output} is a {suffix} file, but --format is {given.value}",
            param_hint=flag,
        )
    return implied


def writable_path(value: Path | None) -> Path | None:
    """Refuse a file the command could not write before any work is done.

    A backtest can run for minutes; a typo in the folder must not cost the run and
    end in a traceback.
    """
    if value is None:
        return None
    if value.is_dir():
        raise typer.BadParameter(f"{value} is a folder; give a file name")
    if not value.parent.is_dir():
        raise typer.BadParameter(f"{value}: folder {value.parent} does not exist")
    return value


Output = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Write here instead of stdout (the suffix gives the format when --format is not).",
        parser=output_path,
        callback=writable_path,
        metavar="FILE",
    ),
]
ForecastSet = Annotated[
    list[str] | None,
    typer.Option(
        "--forecast-set",
        help="Forecast setting NAME=VALUE, repeatable: e.g. target_cpu_shortfall=0.01, "
        "max_changes_per_day=4, lulls.follow=false (see ForecastSettings).",
    ),
]

ChangesPerDay = Annotated[
    int | None,
    typer.Option(
        "--changes-per-day",
        min=1,
        help="The change budget: request changes a container may take in any 24 h (the "
        f"forecast's max_changes_per_day, default {DEFAULT_CHANGES_PER_DAY}); a VPA's "
        "annotation kube-tailor.io/changes-per-day wins for its workloads.",
    ),
]


def with_budget(
    settings: ForecastSettings | None, changes_per_day: int | None
) -> ForecastSettings | None:
    """`settings` (or the defaults) at the `--changes-per-day` budget, when one is given."""
    if changes_per_day is None:
        return settings
    return (settings or ForecastSettings()).with_budget(changes_per_day)


IgnoreThrottling = Annotated[
    bool,
    typer.Option(
        "--ignore-throttling",
        help="Size CPU on usage alone, as upstream does, not on usage + the time a CPU "
        "limit throttled the container (container_cpu_cfs_throttled_seconds_total).",
    ),
]


VpaSet = Annotated[
    list[str] | None,
    typer.Option(
        "--vpa-set",
        help="Upstream-model setting NAME=VALUE, repeatable: e.g. target_percentile=0.95, "
        "safety_margin=0.1, pod_min_cpu=0.05 (see VpaSettings; defaults: upstream's flags).",
    ),
]


BaselineSet = Annotated[
    list[str] | None,
    typer.Option(
        "--baseline-set",
        help="Baseline setting STRATEGY:NAME=VALUE, repeatable: e.g. krr:cpu_percentile=0.99, "
        "autopilot:policy.max_changes_per_day=6 (see KrrSettings, AutopilotSettings).",
    ),
]


def baseline_settings_option(pairs: list[str] | None) -> dict[str, object]:
    """The baselines' settings `--baseline-set` asks for (empty: the defaults), checked."""
    from recommender.backtest.registry import baseline_settings  # only backtest needs it

    try:
        return baseline_settings(pairs or [])
    except SettingsError as error:
        raise typer.BadParameter(str(error), param_hint="--baseline-set") from error


def forecast_settings(pairs: list[str] | None) -> ForecastSettings | None:
    """The forecast settings `--forecast-set` asks for (None: the defaults), checked."""
    if not pairs:
        return None
    try:
        return settings_with(pairs, ForecastSettings(), "forecast")
    except SettingsError as error:
        raise typer.BadParameter(str(error), param_hint="--forecast-set") from error


def vpa_settings(pairs: list[str] | None) -> VpaSettings | None:
    """The upstream model's settings `--vpa-set` asks for (None: upstream's defaults)."""
    if not pairs:
        return None
    try:
        return settings_with(pairs, VpaSettings(), "vpa")
    except SettingsError as error:
        raise typer.BadParameter(str(error), param_hint="--vpa-set") from error


def sample_step(source: PrometheusOptions | None) -> int | None:
    """Prometheus' own grid (seconds) when it is the source; else the history's is inferred."""
    return None if source is None else int(parse_duration(source.step).total_seconds())


@contextmanager
def forecast_errors(
    settings: ForecastSettings | None, source: PrometheusOptions | None
) -> Iterator[None]:
    """The forecaster's refusals as errors naming the flag at fault: a history with no two
    samples of a series is a clear error, not a traceback."""
    try:
        yield
    except SamplePeriodError as error:
        raise typer.BadParameter(
            f"{error}: the forecaster needs a series with two samples or more",
            param_hint="--input",
        ) from error
    except SettingsError as error:
        if settings is not None:
            raise typer.BadParameter(str(error), param_hint="--forecast-set") from error
        # the defaults fit any sane grid: the history's own sample period is at fault
        if source is not None:
            raise typer.BadParameter(str(error), param_hint="--step") from error
        raise typer.BadParameter(
            f"{error} (the sample period is the most common gap between a series' timestamps)",
            param_hint="--input",
        ) from error


def forecast_workloads(
    usage: pd.DataFrame,
    events: pd.DataFrame,
    settings: ForecastSettings | None,
    source: PrometheusOptions | None,
    count_throttling: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The forecaster's recommendations and schedule (see `forecast_errors`)."""
    with forecast_errors(settings, source):
        # read_history's sources validate what they return
        return recommend_forecast_workloads(
            usage,
            events,
            settings,
            sample_step(source),
            checked=True,
            count_throttling=count_throttling,
        )


def read_history(
    console: Console,
    demo: bool,
    input: Path | None,
    events: Path | None,
    prometheus: PrometheusOptions | None,
    namespaces: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exactly one source: the demo fleet, a file, or Prometheus (which filters namespaces
    in its query; the others are filtered here)."""
    one_source({"--demo": demo, "--input FILE": input is not None, "--prometheus URL": prometheus})
    if prometheus is None:
        usage, event_frame = only_namespaces(*load_history(demo, input, events, None), namespaces)
        if events is not None:
            note_unmatched_ooms(console, usage, event_frame)
        return usage, event_frame
    if events is not None:
        raise typer.BadParameter("--events goes with --input; Prometheus has its own OOM events")
    return load_from_prometheus(prometheus, console)


def note_unmatched_ooms(console: Console, usage: pd.DataFrame, events: pd.DataFrame) -> None:
    """Both models and the backtest ignore kills of containers the history lacks; a
    namespace typo in an events file used to drop every kill without a word."""
    unmatched = unmatched_oom_kills(usage, events)
    if unmatched:
        reasons = events["reason"]
        kills = int(reasons.isin(OOM_LIKE).sum())  # a pressure episode counts as a kill
        what = "OOM kills" if (reasons == "OOMKilled").sum() == kills else "OOM-like events"
        console.print(
            f"note: {unmatched} of {kills} {what} in the events file match no container "
            "of the history (by namespace, pod and container) and are ignored",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def prometheus_options(
    url: str | None,
    history: str,
    step: str,
    chunk: str | None,
    namespace: list[str] | None,
    match: list[str] | None,
    token_file: Path | None,
    insecure: bool,
    names: list[str] | None = None,
    username: str | None = None,
    password_file: Path | None = None,
) -> PrometheusOptions | None:
    """The --prometheus flag family as one value (None without --prometheus).

    Its flags mean nothing to a file or the demo fleet, which carry their own period and
    labels; they used to be ignored there silently, so `--match cluster=prod` looked applied.
    """
    if url is None:
        given = {
            "--history": history != HISTORY_DEFAULT,
            "--step": step != STEP_DEFAULT,
            "--chunk": chunk is not None,
            "--match": bool(match),
            "--bearer-token-file": token_file is not None,
            "--insecure": insecure,
            "--prometheus-set": bool(names),
            "--prometheus-username": username is not None,
            "--prometheus-password-file": password_file is not None,
        }
        stray = [flag for flag, on in given.items() if on]
        if stray:
            verb = "goes" if len(stray) == 1 else "go"
            raise typer.BadParameter(f"{', '.join(stray)} {verb} with --prometheus URL")
        return None
    if url and "://" not in url:  # host:9090 reached requests as a scheme "host"
        raise typer.BadParameter(
            f"{url!r} is not a URL; did you mean http://{url}?", param_hint="--prometheus"
        )
    return PrometheusOptions(
        url=url,
        history=history,
        step=step,
        chunk=chunk,
        namespaces=tuple(namespace or ()),
        matchers=tuple(match or ()),
        token_file=token_file,
        insecure=insecure,
        names=tuple(names or ()),
        username=username,
        password_file=password_file,
    )
