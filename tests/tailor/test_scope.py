"""The namespace scope every component shares (`--vpa-object-namespace`,
`--ignored-vpa-object-namespaces`): pure, and refused at the command line when impossible."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailor.cli.main import app
from tailor.scope import NamespaceScope, ScopeError
from tests.cli_text import plain


def test_all_namespaces_but_the_ignored_ones_or_only_one() -> None:
    everywhere = NamespaceScope.parse(None, " kube-system, ,ops ")
    assert everywhere.ignored == {"kube-system", "ops"}
    assert everywhere.includes("shop") and not everywhere.includes("ops")
    assert everywhere.describe() == "all namespaces but kube-system, ops"
    one = NamespaceScope.parse("shop", None)
    assert one.includes("shop") and not one.includes("ops")
    assert NamespaceScope().includes("anything")


@pytest.mark.parametrize(
    ("only", "ignored", "message"),
    [
        ("Shop", None, "'Shop' is not a namespace name"),
        (None, "ops,kube_system", "'kube_system' is not a namespace name"),
        ("shop", "shop", "both the only one and ignored"),
        ("a" * 64, None, "is not a namespace name"),
    ],
)
def test_impossible_scopes_are_refused(only: str | None, ignored: str | None, message: str) -> None:
    with pytest.raises(ScopeError, match=message):
        NamespaceScope.parse(only, ignored)


@pytest.mark.parametrize("command", ["follow", "recommender", "admission"])
def test_each_service_refuses_a_bad_scope_with_exit_2(command: str, tmp_path: Path) -> None:
    schedule = tmp_path / "s.json"
    schedule.write_text("[]")
    needs = {
        "follow": ["--schedule", str(schedule), "--once"],
        "recommender": ["--prometheus", "http://p:9", "--once"],
        "admission": ["--tls-cert", str(schedule), "--tls-key", str(schedule)],
    }[command]
    args = [command, *needs, "--kubeconfig", str(tmp_path / "absent")]
    result = CliRunner().invoke(app, [*args, "--vpa-object-namespace", "Not_A_Name"])
    assert result.exit_code == 2, result.output
    assert "is not a namespace name" in plain(result.output)
