"""The namespace scope every component shares (`--vpa-object-namespace`,
`--ignored-vpa-object-namespaces`): pure, and refused at the command line when impossible."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailor.cli.main import app
from tailor.scope import NamespaceScope, ScopeError, protected_namespaces, protecting
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


def test_the_updater_protects_the_system_and_its_own_namespace_by_default() -> None:
    scope = protecting(NamespaceScope.parse(None, "ops"), protected_namespaces(None, "tailor"))
    assert not scope.includes("kube-system") and not scope.includes("tailor")
    assert not scope.includes("ops") and scope.includes("shop")
    opened = protecting(NamespaceScope(), protected_namespaces("", "tailor"))
    assert opened.includes("kube-system") and opened.includes("tailor")
    chosen = protected_namespaces(" lab, ,kube-system ", "tailor")
    assert chosen == {"lab", "kube-system"}  # an explicit list replaces the default
    with pytest.raises(ScopeError, match="'kube-system' is protected"):
        protecting(NamespaceScope.parse("kube-system", None), protected_namespaces(None, "t"))
    with pytest.raises(ScopeError, match="'Lab' is not a namespace name"):
        protected_namespaces("Lab", "t")


def test_the_updater_refuses_to_act_only_in_a_protected_namespace(tmp_path: Path) -> None:
    schedule = tmp_path / "s.json"
    schedule.write_text("[]")
    result = CliRunner().invoke(
        app, ["follow", "--once", "--schedule", str(schedule), "--vpa-object-namespace=kube-system"]
    )
    assert result.exit_code == 2
    assert "'kube-system' is protected" in plain(result.output)
