"""`tailor recommend`'s answer: current beside recommended, the change, severity, savings;
a table that reads whole on an 80- or 100-column terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from recommender.advice import advise
from recommender.data.files import write_usage
from recommender.data.synthetic import demo_fleet
from recommender.savings import savings_summary
from tailor.cli.main import app
from tailor.cli.output import recommendation_view, short_cpu, short_memory
from tailor.cli.tables import text_of
from tests.cli_text import plain

runner = CliRunner()
LONG = "a-workload-name-long-enough-to-need-wrapping-on-any-terminal"


def advised_demo(rename: bool = True) -> pd.DataFrame:
    usage, events = demo_fleet()
    if rename:  # names as long as real ones, to make the table wrap
        usage["workload"] = usage["workload"].replace("inventory", LONG)
        usage["namespace"] = "payments-production-eu-west-1"
        events["namespace"] = "payments-production-eu-west-1"
    return advise(usage, events, checked=True)


def column_text(lines: list[str], start: int, end: int) -> str:
    """The text of one table column (character span) read down the rows, joined."""
    return "".join(line[start:end].strip() for line in lines)


@pytest.mark.parametrize("width", [80, 100])
def test_no_cell_is_cut_at_an_ordinary_width(width: int) -> None:
    rows = advised_demo()
    text = text_of(recommendation_view(rows, savings_summary(rows)), width=width)
    lines = text.splitlines()
    assert "…" not in text
    assert max(len(line) for line in lines) <= width
    for row in rows.itertuples():  # every quantity whole, on one line
        for resource in ("cpu", "memory"):
            shown = short_cpu if resource == "cpu" else short_memory
            now, after = getattr(row, f"{resource}_current"), getattr(row, f"{resource}_target")
            assert f"{shown(now)} → {shown(after)}" in text
    header = next(line for line in lines if "workload" in line and "container" in line)
    start, end = header.index("workload"), header.index("container")
    body = lines[lines.index(header) + 2 :]
    names = column_text(body, start, end)
    assert LONG in names  # wrapped across lines, but every character is there
    assert "payments-production-eu-west-1" in column_text(body, 0, start)


def test_the_json_rows_gain_current_and_severity_and_keep_their_keys(tmp_path: Path) -> None:
    usage, _ = demo_fleet(days=2)
    usage.loc[usage["workload"] == "web", "cpu_request"] = float("nan")
    source = tmp_path / "usage.parquet"
    write_usage(usage, source)
    result = runner.invoke(app, ["recommend", "--input", str(source), "--format", "json"])
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert isinstance(records, list)
    for record in records:
        assert set(record) >= {"namespace", "workload", "container", "cpu", "memory"}
        assert set(record["current"]) == {"cpu", "memory"}
        assert record["severity"] in {"good", "warning", "critical", "unknown"}
        if record["workload"] == "web":
            assert record["current"]["cpu"] is None
            assert record["severity"] == "unknown" or record["severity"] == "critical"
        else:
            expected = usage[usage.workload == record["workload"]]["cpu_request"].iloc[-1]
            assert record["current"]["cpu"] == pytest.approx(expected)


def test_summary_is_a_second_json_document_with_the_totals() -> None:
    args = ["recommend", "--demo", "--format", "json", "--summary", "--cpu-price", "1"]
    result = runner.invoke(app, [*args, "--memory-price", "0"])
    assert result.exit_code == 0, result.output
    decoder = json.JSONDecoder()
    records, end = decoder.raw_decode(result.stdout)
    summary, _ = decoder.raw_decode(result.stdout[end:].lstrip())
    assert isinstance(records, list)
    total = summary["summary"]["total"]
    now = sum(r["current"]["cpu"] * r["pods"] for r in records)
    assert total["cpu"]["now"] == pytest.approx(now)
    assert total["costPerMonth"]["now"] == pytest.approx(now * 730)  # 1 per core-hour
    assert set(summary["summary"]["namespaces"]) == {r["namespace"] for r in records}


def test_yaml_summary_is_a_second_document() -> None:
    result = runner.invoke(app, ["recommend", "--demo", "--format", "yaml", "--summary"])
    assert result.exit_code == 0, result.output
    documents = list(yaml.safe_load_all(result.stdout))
    assert isinstance(documents[0], list) and "summary" in documents[1]


def test_the_table_has_a_footer_with_the_totals_and_the_severity() -> None:
    result = runner.invoke(app, ["recommend", "--demo", "--cpu-price", "0.05"])
    assert result.exit_code == 0, result.output
    assert "severity" in result.stdout and "critical" in result.stdout
    footer = result.stdout[result.stdout.index("cost / month") :]
    usage, events = demo_fleet()
    total = savings_summary(advise(usage, events, checked=True), None).iloc[-1]
    assert "total" in footer
    assert f"{total['cpu_now']:.3g} → {total['cpu_after']:.3g}" in footer


@pytest.mark.parametrize("strategy", ["vpa", "forecast"])
def test_explain_prints_each_explanation_under_its_figures(strategy: str) -> None:
    result = runner.invoke(app, ["recommend", "--demo", "--explain", "--strategy", strategy])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    usage, _ = demo_fleet()
    for workload in usage["workload"].unique():
        head = next(i for i, line in enumerate(lines) if f"/{workload}/" in line)
        assert lines[head + 3].lstrip().startswith("why: ")
    if strategy == "vpa":
        assert "p90 of usage" in result.stdout


def test_wide_shows_every_bound_in_its_own_column() -> None:
    result = runner.invoke(app, ["recommend", "--demo", "--wide", "--no-summary"])
    assert result.exit_code == 0, result.output
    for header in ("cpu now", "cpu lowerBound", "memory upperBound", "memory change"):
        assert header in result.stdout
    assert "cost / month" not in result.stdout


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("kube-tailor ")


def test_a_prometheus_without_a_scheme_gets_a_suggestion() -> None:
    result = runner.invoke(app, ["recommend", "--prometheus", "prom.example:9090"])
    assert result.exit_code == 2
    assert "did you mean http://prom.example:9090" in plain(result.output)


def test_an_unreachable_prometheus_names_the_host_and_cause_not_the_query() -> None:
    result = runner.invoke(app, ["recommend", "--prometheus", "http://127.0.0.1:9"])
    said = plain(result.output)
    assert result.exit_code == 2
    assert "cannot reach Prometheus at http://127.0.0.1:9: [Errno 111] Connection refused" in said
    assert "query_range" not in said and "%7B" not in said
