"""Talking to Prometheus's HTTP API: the session (auth, TLS, retries) and range queries.

Every failure becomes a `PrometheusSourceError` that names the URL: unreachable,
refused credentials, a refused query, or a server that is not Prometheus at all.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from recommender.data.prometheus_settings import PrometheusSettings, PrometheusSourceError


def connect(settings: PrometheusSettings) -> PrometheusConnect:
    """A prometheus-api-client connection with the settings' auth, TLS and retries."""
    session = requests.Session()
    session.verify = str(settings.ca_file) if settings.ca_file else settings.verify_tls
    headers = dict(settings.headers)
    if settings.bearer_token is not None:
        headers["Authorization"] = f"Bearer {settings.bearer_token.get_secret_value()}"
    if settings.username is not None and settings.password is not None:
        session.auth = (settings.username, settings.password.get_secret_value())
    retry = Retry(
        total=settings.retries,
        backoff_factor=0.5,
        status_forcelist=[429, 502, 503, 504],
        allowed_methods=["GET"],
    )
    return PrometheusConnect(
        url=settings.url.rstrip("/"),
        headers=headers or None,
        retry=retry,
        session=session,
        timeout=settings.timeout_seconds,
    )


class Fetcher:
    """Runs each query chunk by chunk and keeps the concatenated samples."""

    def __init__(self, settings: PrometheusSettings, client: PrometheusConnect) -> None:
        self.settings = settings
        self.client = client

    def range_query(self, query: str, first: int, last: int) -> list[dict]:
        url = self.settings.url
        try:
            result = self.client.custom_query_range(
                query,
                start_time=datetime.fromtimestamp(first, UTC),
                end_time=datetime.fromtimestamp(last, UTC),
                step=str(self.settings.step_seconds),
            )
        except (requests.exceptions.JSONDecodeError, KeyError, TypeError) as error:
            raise _not_prometheus(url, f"{type(error).__name__}: {error}") from error
        except requests.exceptions.RequestException as error:
            raise PrometheusSourceError(f"cannot reach Prometheus at {url}: {error}") from error
        except PrometheusApiClientException as error:
            if re.search(r"\b40[13]\b", str(error)):  # no query is at fault: the credentials
                raise PrometheusSourceError(
                    f"Prometheus at {url} refused the credentials ({error}): check the "
                    "bearer token, or the basic auth username and password"
                ) from error
            raise PrometheusSourceError(
                f"Prometheus at {url} refused query {query!r}: {error}"
            ) from error
        if not isinstance(result, list) or not all(_is_series(item) for item in result):
            raise _not_prometheus(url, f"no range-query matrix in {str(result)[:200]!r}")
        return result


def _is_series(item: object) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("metric"), dict)
        and isinstance(item.get("values"), list)
    )


def _not_prometheus(url: str, detail: str) -> PrometheusSourceError:
    """A server that answers, but not with Prometheus's HTTP API: usually a wrong URL
    (a Grafana or web UI page, a proxy's landing page) rather than a broken Prometheus."""
    return PrometheusSourceError(
        f"{url} does not answer like a Prometheus server ({detail}); --prometheus wants "
        "the base URL of Prometheus's HTTP API, e.g. http://prometheus:9090"
    )
