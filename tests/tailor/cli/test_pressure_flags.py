"""The recommender reads memory-pressure episodes back with the rule its flags give, the
one the updater was given, and refuses a rule it cannot use before it reads anything."""

from __future__ import annotations

from datetime import timedelta

from typer.testing import CliRunner

from tailor.cli.inputs import PrometheusOptions, prometheus_settings
from tailor.cli.main import app
from tailor.cli.memory_pressure import pressure_rule
from tailor.memory_pressure import PressureRule
from tests.cli_text import plain


def test_the_flags_rule_reaches_the_history_source() -> None:
    rule = pressure_rule(0.25, "30s")
    settings = prometheus_settings(PrometheusOptions("http://prometheus:9090", pressure=rule))
    assert settings.memory_pressure == PressureRule(
        stalled_share=0.25, window=timedelta(seconds=30)
    )
    default = prometheus_settings(PrometheusOptions("http://prometheus:9090"))
    assert default.memory_pressure == PressureRule()  # the updater's default rule


def test_a_rule_the_recommender_cannot_use_exits_2_naming_the_flag() -> None:
    for flags, message in (
        (["--memory-pressure-window", "0s"], "--memory-pressure-window: must be at least 1s"),
        (["--memory-pressure-stalled", "2"], "--memory-pressure-stalled: the stalled share"),
    ):
        result = CliRunner().invoke(
            app, ["recommender", "--once", "--prometheus", "http://127.0.0.1:9", *flags]
        )
        assert result.exit_code == 2
        assert message in plain(result.output)
