"""`--leader-elect` flags: timings or names the API server would never accept are exit 2,
before any connection is made."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tailor.cli import election as election_flags
from tailor.cli.main import app
from tests.cli_text import plain


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--leader-elect-renew-deadline=20s"], "shorter than the lease duration"),
        (["--leader-elect-retry-period=9s"], "longer than 1.2"),
        (["--leader-elect-lease-duration=soon"], "--leader-elect-lease-duration"),
        (["--leader-elect-resource-name=Tailor_Lease"], "not a valid Kubernetes name"),
        (["--leader-elect-resource-namespace=a.b"], "not a valid Kubernetes name"),
    ],
)
@pytest.mark.parametrize("command", ["follow", "recommender"])
def test_unworkable_election_flags_are_refused_before_connecting(
    command: str, flags: list[str], message: str, tmp_path: Path
) -> None:
    schedule = tmp_path / "s.json"
    schedule.write_text("[]")
    source = (
        ["--schedule", str(schedule)] if command == "follow" else ["--prometheus", "http://p:9"]
    )
    nowhere = ["--kubeconfig", str(tmp_path / "absent")]  # connecting would fail differently
    result = CliRunner().invoke(app, [command, *source, *nowhere, "--leader-elect", *flags])
    assert result.exit_code == 2, result.output
    assert message in plain(result.output)


def test_the_defaults_are_upstreams_and_the_lease_is_named_after_the_component() -> None:
    chosen = election_flags.election("updater", True, "15s", "10s", "2s", None, "ops")
    assert chosen is not None
    assert (chosen.namespace, chosen.name) == ("ops", "tailor-updater")
    timing = chosen.timing
    assert [t.total_seconds() for t in (timing.lease_duration, timing.renew_deadline)] == [15, 10]
    other = election_flags.election("updater", True, "15s", "10s", "2s", None, "ops")
    assert other is not None and other.identity != chosen.identity  # one per process start
    assert election_flags.election("updater", False, "15s", "10s", "2s", None, None) is None
