"""`tailor recommend` through its real entry point: output contract and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from recommender.data.files import write_usage
from recommender.data.synthetic import demo_fleet
from recommender.recommend import recommend_vpa
from recommender.vpa.settings import VpaSettings
from tailor.cli.main import app
from tests.cli_text import plain

runner = CliRunner()


def test_demo_json_matches_library_and_contract() -> None:
    result = runner.invoke(app, ["recommend", "--demo", "--format", "json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    usage, events = demo_fleet()
    expected = recommend_vpa(usage, events)
    assert len(records) == len(expected)
    for record in records:
        assert set(record) >= {"namespace", "workload", "container", "cpu", "memory"}
        for resource in ("cpu", "memory"):
            bounds = record[resource]
            assert set(bounds) == {"target", "lowerBound", "upperBound"}
            assert bounds["lowerBound"] <= bounds["target"] <= bounds["upperBound"]
        row = expected[
            (expected.workload == record["workload"]) & (expected.container == record["container"])
        ].iloc[0]
        assert record["cpu"]["target"] == pytest.approx(row.cpu_target)
        assert record["memory"]["upperBound"] == pytest.approx(row.memory_upper)


def test_file_input_yaml_and_csv_outputs(tmp_path: Path) -> None:
    usage, _ = demo_fleet(days=2)
    source = tmp_path / "usage.parquet"
    write_usage(usage, source)
    result = runner.invoke(app, ["recommend", "--input", str(source), "--format", "yaml"])
    assert result.exit_code == 0, result.output
    records = yaml.safe_load(result.stdout)
    assert {r["workload"] for r in records} == set(usage["workload"])
    target = tmp_path / "out.csv"
    result = runner.invoke(
        app, ["recommend", "--input", str(source), "--format", "csv", "--output", str(target)]
    )
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(target)
    assert list(frame.columns[:3]) == ["namespace", "workload", "container"]
    assert (frame["cpu_target"] >= frame["cpu_lower"]).all()


def test_vpa_set_tunes_upstreams_model_as_the_library_does() -> None:
    flags = ["--vpa-set", "target_percentile=0.5", "--vpa-set", "pod_min_cpu=0.2"]
    result = runner.invoke(app, ["recommend", "--demo", "--format", "json", *flags])
    assert result.exit_code == 0, result.output
    usage, events = demo_fleet()
    tuned = recommend_vpa(usage, events, VpaSettings(target_percentile=0.5, pod_min_cpu=0.2))
    default = recommend_vpa(usage, events)
    targets = sorted(r["cpu"]["target"] for r in json.loads(result.stdout))
    assert targets == pytest.approx(sorted(tuned.cpu_target))
    assert targets != pytest.approx(sorted(default.cpu_target))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vpa-set", "target_percentil=0.5"], "did you mean target_percentile"),
        (["--vpa-set", "safety_margin=-1"], "safety_margin cannot be negative"),
        (["--vpa-set", "safety_margin"], "--vpa-set"),
        (["--strategy", "forecast", "--vpa-set", "safety_margin=0"], "needs --strategy vpa"),
    ],
)
def test_a_bad_vpa_setting_is_exit_2_naming_it(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["recommend", "--demo", *args])
    assert result.exit_code == 2
    assert message in plain(result.output)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--demo", "--input", "x.csv"],
        ["--input", "does-not-exist.csv"],
        ["--demo", "--strategy", "nope"],
        ["--demo", "--format", "xml"],
        ["--demo", "--events", "e.csv"],
        ["--prometheus", "http://127.0.0.1:9", "--history", "eight days"],
        ["--prometheus", "http://127.0.0.1:9", "--match", "novalue"],
        ["--prometheus", "http://127.0.0.1:9", "--demo"],
    ],
)
def test_bad_flags_exit_non_zero_with_message(args: list[str]) -> None:
    result = runner.invoke(app, ["recommend", *args])
    assert result.exit_code != 0
    assert result.output.strip(), "a bad flag must say what is wrong"


@pytest.mark.parametrize("flag", ["--input", "--events"])
def test_a_directory_is_called_one(tmp_path: Path, flag: str) -> None:
    """Not "no such file", which sent people looking for a typo."""
    source = tmp_path / "usage.parquet"
    write_usage(demo_fleet(days=1)[0], source)
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    args = {"--input": str(source), flag: str(folder)}
    result = runner.invoke(app, ["recommend", *(part for pair in args.items() for part in pair)])
    assert result.exit_code == 2, result.output
    assert "is a directory, not a file" in plain(result.output)


HEADER = "timestamp,namespace,pod,container,cpu,memory\n"
FIRST_ROW = "2024-01-01T00:00:00Z,a,p,c,0.5,100\n"


@pytest.mark.parametrize(
    ("last_row", "expected"),
    [
        ("2024-01-01T00:05:00Z,a,p,c,-1,100\n", ("row 2", "cpu", "negative", "file line 4")),
        # the last line of an interrupted download used to read as cpu 0, memory not measured
        ("2024-01-01T00:05:00Z,a,p,c,0.", ("row 2", "memory", "missing field", "file line 4")),
    ],
)
@pytest.mark.parametrize("command", ["recommend", "schedule", "backtest"])
def test_malformed_file_names_row_line_and_column_without_usage(
    tmp_path: Path, last_row: str, expected: tuple[str, ...], command: str
) -> None:
    """The data is at fault, not the flags: no usage banner sends the user to --help."""
    bad = tmp_path / "bad.csv"
    bad.write_text(HEADER + FIRST_ROW + "\n" + last_row)  # a blank line: line 4 is row 2
    # wide enough that rich never wraps the temporary path inside its error box
    result = runner.invoke(app, [command, "--input", str(bad)], env={"COLUMNS": "1000"})
    assert result.exit_code == 2
    text = plain(result.output)
    assert "bad.csv" in text and all(part in text for part in expected), text
    assert "Usage:" not in result.output and "--help" not in result.output
    assert "Traceback" not in result.output


def test_unreachable_prometheus_is_a_clear_error() -> None:
    result = runner.invoke(
        app, ["recommend", "--prometheus", "http://127.0.0.1:9", "--history", "1h"]
    )
    assert result.exit_code == 2
    assert "127.0.0.1:9" in result.output


def test_a_short_step_needs_no_chunk_but_an_explicit_chunk_is_checked() -> None:
    base = ["recommend", "--prometheus", "http://127.0.0.1:9", "--history", "2m"]
    short_step = runner.invoke(app, [*base, "--step", "5s"])
    assert short_step.exit_code == 2
    assert "cannot reach Prometheus" in short_step.output  # got past the settings
    too_long = runner.invoke(app, [*base, "--step", "1s", "--chunk", "1d"])
    assert too_long.exit_code == 2
    assert "11000" in too_long.output


@pytest.mark.parametrize("command", ["recommend", "schedule"])
def test_an_output_in_a_missing_folder_is_refused(tmp_path: Path, command: str) -> None:
    target = tmp_path / "missing" / "out.json"
    result = runner.invoke(app, [command, "--demo", "--format", "json", "--output", str(target)])
    assert result.exit_code == 2
    assert "does not exist" in plain(result.output)
    assert not target.parent.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--history", "0d"], "at least one step"),
        (["--step", "0s"], "whole number of seconds"),
        (["--chunk", "7m"], "multiple of step"),
        (["--match", "1abc=x"], "invalid Prometheus label name"),
        (["--match", "cluster=a", "--match", "cluster=b"], "--match cluster given twice"),
    ],
)
def test_bad_prometheus_flags_are_refused_before_any_query(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["recommend", "--prometheus", "http://127.0.0.1:9", *args])
    text = plain(result.output)
    assert result.exit_code == 2
    assert message in text
    assert "errors.pydantic.dev" not in text and "Traceback" not in text


@pytest.mark.parametrize("command", ["recommend", "schedule"])
@pytest.mark.parametrize("label", ["__name__", "__meta_x", "reason", "container"])
def test_a_match_on_a_reserved_or_query_label_is_refused_not_queried(
    command: str, label: str
) -> None:
    """Nothing listens on port 9: the error must be about the flag, before any connection."""
    result = runner.invoke(
        app, [command, "--prometheus", "http://127.0.0.1:9", "--match", f"{label}=x"]
    )
    text = plain(result.output)
    assert result.exit_code == 2
    assert "--match" in text and f"'{label}'" in text, text
    assert "cannot reach" not in text and "127.0.0.1" not in text


@pytest.mark.parametrize("command", ["recommend", "schedule"])
def test_the_source_error_names_the_sources_the_command_has(command: str) -> None:
    result = runner.invoke(app, [command])
    text = plain(result.output)
    assert result.exit_code == 2
    assert "--prometheus URL" in text and "--dataset" not in text


def _two_namespaces(tmp_path: Path) -> Path:
    usage, _ = demo_fleet(days=1)
    other = usage.assign(namespace="staging")
    source = tmp_path / "usage.parquet"
    write_usage(pd.concat([usage, other], ignore_index=True), source)
    return source


@pytest.mark.parametrize("command", [["recommend"], ["schedule"]])
def test_namespace_filters_a_file(tmp_path: Path, command: list[str]) -> None:
    """-n used to be ignored for files: every namespace came back."""
    source = _two_namespaces(tmp_path)
    result = runner.invoke(
        app, [*command, "--input", str(source), "-n", "staging", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert {row["namespace"] for row in json.loads(result.stdout)} == {"staging"}


def test_a_namespace_the_file_lacks_is_a_clear_error(tmp_path: Path) -> None:
    source = _two_namespaces(tmp_path)
    target = tmp_path / "out.json"
    args = ["--input", str(source), "-n", "prod", "--format", "json", "-o", str(target)]
    result = runner.invoke(app, ["recommend", *args])
    text = plain(result.output)
    assert result.exit_code == 2
    assert "no series in namespace prod" in text and "demo, staging" in text
    assert not target.exists()


@pytest.mark.parametrize(
    ("args", "flags"),
    [
        (["--match", "cluster=prod"], "--match goes"),
        (["--step", "1m", "--insecure"], "--step, --insecure go"),
        (["--history", "1d"], "--history goes"),
    ],
)
@pytest.mark.parametrize("command", ["recommend", "schedule"])
def test_prometheus_flags_without_prometheus_are_refused(
    command: str, args: list[str], flags: str
) -> None:
    """They used to be ignored, so a file's answer looked filtered by --match cluster=prod."""
    result = runner.invoke(app, [command, "--demo", *args])
    assert result.exit_code == 2
    assert f"{flags} with --prometheus URL" in plain(result.output)


@pytest.mark.parametrize(("text", "message"), [("\n", "is empty"), ("abc\ndef\n", "one word")])
def test_an_empty_or_multi_line_token_file_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    token = tmp_path / "token"
    token.write_text(text)
    args = ["--prometheus", "http://127.0.0.1:9", "--bearer-token-file", str(token)]
    result = runner.invoke(app, ["recommend", *args])
    assert result.exit_code == 2
    assert message in plain(result.output) and "cannot reach" not in plain(result.output)


@pytest.mark.parametrize(
    "command", [["recommend"], ["recommend", "--strategy", "forecast"], ["schedule"]]
)
def test_kills_of_no_container_are_noted(tmp_path: Path, command: list[str]) -> None:
    """A namespace typo in the events file used to drop every kill without a word."""
    usage, _ = demo_fleet(days=1)
    source, events = tmp_path / "usage.parquet", tmp_path / "events.csv"
    write_usage(usage, source)
    kill = "2024-01-01T00:0{}:00Z,dmeo,web,web-7c9d4b-2xk8q,app,OOMKilled,1e9\n"
    events.write_text(
        "timestamp,namespace,workload,pod,container,reason,memory\n"
        + kill.format(0)
        + kill.format(5)
        + "2024-01-01T00:00:00Z,dmeo,web,web-7c9d4b-2xk8q,app,Evicted,1e9\n"
    )
    args = [*command, "--input", str(source), "--events", str(events), "--format", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "note: 2 of 2 OOM kills in the events file match no container" in plain(result.stderr)
    json.loads(result.stdout)
    # a memory-pressure episode counts as a kill (`recommender.data.ooms.OOM_LIKE`)
    with events.open("a") as more:
        more.write(kill.format(9).replace("OOMKilled", "MemoryPressure"))
    pressed = runner.invoke(app, args)
    assert "note: 3 of 3 OOM-like events in the events file match no" in plain(pressed.stderr)
    events.write_text(events.read_text().replace("dmeo", "demo"))
    assert "note" not in runner.invoke(app, args).stderr


@pytest.mark.parametrize("command", ["recommend", "schedule", "recommender"])
@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("labels.pods=pod_name", "did you mean labels.pod"),
        ("labels.pod=pod-name", "labels.pod: invalid Prometheus label name"),
        ("metrics.memory_working_set=rss bytes", "invalid Prometheus metric name"),
        ("pod_name", "expected NAME=VALUE"),
    ],
)
def test_a_bad_prometheus_name_is_refused_before_any_query(
    command: str, setting: str, message: str
) -> None:
    """Nothing listens on port 9: the error must name the setting, before any connection."""
    args = [command, "--prometheus", "http://127.0.0.1:9", "--prometheus-set", setting]
    result = runner.invoke(app, [*args, "--once"] if command == "recommender" else args)
    text = plain(result.output)
    assert result.exit_code == 2
    assert "--prometheus-set" in text and message in text, text
    assert "cannot reach" not in text


def test_a_match_on_a_renamed_container_label_is_refused() -> None:
    args = ["--prometheus-set", "labels.container=container_name", "--match", "container_name=x"]
    result = runner.invoke(app, ["recommend", "--prometheus", "http://127.0.0.1:9", *args])
    assert result.exit_code == 2
    assert "'container_name' is set by the history queries" in plain(result.output)


@pytest.mark.parametrize("command", ["recommend", "schedule"])
def test_prometheus_names_without_prometheus_are_refused(command: str) -> None:
    result = runner.invoke(app, [command, "--demo", "--prometheus-set", "labels.pod=pod_name"])
    assert result.exit_code == 2
    assert "--prometheus-set goes with --prometheus URL" in plain(result.output)


def test_basic_auth_flags_are_checked_before_any_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROMETHEUS_USERNAME", raising=False)
    monkeypatch.delenv("PROMETHEUS_PASSWORD", raising=False)
    secret, token = tmp_path / "password", tmp_path / "token"
    secret.write_text("pw\n")
    token.write_text("abc\n")
    base = ["recommend", "--prometheus", "http://127.0.0.1:9"]
    for flags, words in (
        (["--prometheus-password-file", str(secret)], "goes with --prometheus-username"),
        (["--prometheus-username", "u"], "needs a password"),
        (["--prometheus-username", "u", "--prometheus-password-file", str(tmp_path / "no")],
         "No such file"),
        (["--prometheus-username", "u", "--prometheus-password-file", str(secret),
          "--bearer-token-file", str(token)], "basic auth or a bearer token, not both"),
    ):  # fmt: skip
        result = runner.invoke(app, [*base, *flags])
        text = plain(result.output)
        assert result.exit_code == 2, flags
        assert words in text and "cannot reach" not in text, text
    stray = runner.invoke(app, ["recommend", "--demo", "--prometheus-username", "u"])
    assert stray.exit_code == 2
    assert "--prometheus-username goes with --prometheus URL" in plain(stray.output)
