"""The prometheus_server fixture's scrape config: loopback targets only, valid timing."""

from __future__ import annotations

import pytest
import yaml

from tests.cluster.prometheus import EMPTY_SCRAPE_CONFIG, SCRAPE_JOB, scrape_config


def test_no_targets_keeps_the_empty_config() -> None:
    assert scrape_config((), "1s") == EMPTY_SCRAPE_CONFIG


def test_loopback_targets_become_one_job_with_timeout_equal_to_interval() -> None:
    targets = ["127.0.0.1:9400", "localhost:9401", "[::1]:9402"]
    config = yaml.safe_load(scrape_config(targets, "2s"))
    (job,) = config["scrape_configs"]
    assert job["job_name"] == SCRAPE_JOB
    assert job["static_configs"] == [{"targets": targets}]
    assert job["scrape_interval"] == job["scrape_timeout"] == "2s"


@pytest.mark.parametrize(
    ("targets", "interval"),
    [
        (["10.0.0.1:9100"], "1s"),  # never another host
        (["example.com:80"], "1s"),
        (["127.0.0.1"], "1s"),  # no port
        (["127.0.0.1:9400"], "1 second"),
    ],
)
def test_other_hosts_and_bad_intervals_are_refused(targets: list[str], interval: str) -> None:
    with pytest.raises(ValueError):
        scrape_config(targets, interval)
