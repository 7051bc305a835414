"""Talking to Prometheus's HTTP API: the session (auth, TLS, retries) and range queries.

Every failure becomes a `PrometheusSourceError` that names the URL: unreachable,
refused credentials, a refused query, or a server that is not Prometheus at all.
"""

from __future__ import annotations

import json
import re

import requests
import urllib3
from prometheus_api_client import PrometheusConnect
from urllib3.util.retry import Retry

from recommender.data.prometheus_matrix import Matrix, decode_matrix, matrix_from_result
from recommender.data.prometheus_settings import PrometheusSettings, PrometheusSourceError


def connect(settings: PrometheusSettings) -> PrometheusConnect:
    """A prometheus-api-client connection with the settings' auth, TLS and retries."""
    session = requests.Session()
    session.verify = str(settings.ca_file) if settings.ca_file else settings.verify_tls
    if settings.client_cert_file is not None:
        cert, key = str(settings.client_cert_file), settings.client_key_file
        session.cert = cert if key is None else (cert, str(key))
    headers = dict(settings.headers)
    if settings.bearer_token is not None:
        headers["Authorization"] = f"Bearer {settings.bearer_token.get_secret_value()}"
    if settings.username is not None and settings.password is not None:
        session.auth = (settings.username, settings.password.get_secret_value())
    # A refused connection or a busy answer (429, 5xx) is retried; a read timeout is not: a
    # Prometheus that accepts but does not answer would cost (retries + 1) timeouts.
    retry = Retry(
        total=settings.retries,
        read=0,
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
    """Runs range queries and hands back their matrices as arrays.

    The request is prometheus-api-client's (its session: auth, TLS, retries), but the
    answer is read as bytes: `decode_matrix` turns it into arrays without building a
    Python object per point. Safe to call from several threads (one session, pooled).

    Answers come uncompressed unless `settings.compressed` (or a header naming an
    Accept-Encoding): gzip cost Prometheus 2.42 four to five times the CPU of encoding
    the answer itself (1.6 s against 0.35 s for a day of 1,000 containers' counters),
    and the reader as much again to inflate it; it pays only over a slow link.
    """

    def __init__(self, settings: PrometheusSettings, client: PrometheusConnect) -> None:
        self.settings = settings
        self.client = client
        self.headers = dict(client.headers or {})
        chosen = any(name.lower() == "accept-encoding" for name in self.headers)
        if not settings.compressed and not chosen:
            self.headers["Accept-Encoding"] = "identity"

    def range_matrix(self, query: str, first: int, last: int) -> Matrix:
        """The matrix of `query` on the grid first, first + step, ..., last."""
        step = str(self.settings.step_seconds)
        params: dict[str, str | int] = {"query": query, "start": first, "end": last, "step": step}
        return self._matrix(self.body("query_range", params))

    def samples(self, query: str, at: int) -> Matrix:
        """The raw samples of `query`, a range selector (`x[...]`), evaluated at `at`:
        every stored sample in the range, with its own time in milliseconds."""
        return self._matrix(self.body("query", {"query": query, "time": at}), 1000)

    def _matrix(self, body: bytes, unit: int = 1) -> Matrix:
        matrix = decode_matrix(body, unit)
        if matrix is not None:
            return matrix
        return matrix_from_result(_parsed_result(self.settings.url, body), unit)

    def body(self, endpoint: str, params: dict[str, str | int]) -> bytes:
        """The body of `answer`, read whole from the socket in one call: `.content` reads
        it 10 kB at a time through requests' and urllib3's Python layers, which cost 3-5x
        the CPU of this on a 15 MB answer (`compressed` answers are inflated as before)."""
        with self.answer(endpoint, params, stream=True) as response:
            try:
                return response.raw.read(decode_content=True)
            except (urllib3.exceptions.HTTPError, OSError) as error:  # cut off, timed out
                query = str(params.get("query", ""))[:60]
                if isinstance(error, TimeoutError | urllib3.exceptions.TimeoutError):
                    raise self._timed_out(query) from error
                raise PrometheusSourceError(
                    f"Prometheus at {self.settings.url} broke off its answer to a query of "
                    f"{query!r}: {error}"
                ) from error

    def _timed_out(self, query: str) -> PrometheusSourceError:
        """The error for an answer to `query` (its first 60 characters named) that took
        longer than the timeout."""
        return PrometheusSourceError(
            f"Prometheus at {self.settings.url} did not answer within "
            f"{self.settings.timeout_seconds:g} s (a query of {query[:60]!r})"
        )

    def answer(
        self, endpoint: str, params: dict[str, str | int], *, stream: bool = False
    ) -> requests.Response:
        """Prometheus's answer to GET /api/v1/`endpoint` with `params` (status 200); with
        `stream`, its body is left unread (`body`)."""
        url = self.settings.url
        client = self.client
        query = str(params.get("query", ""))
        try:
            response = client._session.request(
                method="GET",
                url=f"{client.url}/api/v1/{endpoint}",
                params=params,
                headers=self.headers,
                auth=client.auth,
                timeout=self.settings.timeout_seconds,
                # named here: a REQUESTS_CA_BUNDLE in the environment would otherwise win
                # over the session's CA file and --insecure
                verify=client._session.verify,
                cert=client._session.cert,
                stream=stream,
            )
        except requests.exceptions.RequestException as error:
            if isinstance(error, requests.exceptions.Timeout) or "timed out" in str(error):
                raise self._timed_out(query) from error
            cause = _cause(error)
            raise PrometheusSourceError(f"cannot reach Prometheus at {url}: {cause}") from error
        if response.status_code != 200:
            problem = f"HTTP Status Code {response.status_code} ({response.content[:500]!r})"
            if response.status_code in (401, 403):  # no query is at fault: the credentials
                raise PrometheusSourceError(
                    f"Prometheus at {url} refused the credentials ({problem}): check the "
                    "bearer token, or the basic auth username and password"
                )
            raise PrometheusSourceError(f"Prometheus at {url} refused query {query!r}: {problem}")
        return response


def _parsed_result(url: str, body: bytes) -> list[dict]:
    """The `data.result` of an answer laid out otherwise than Prometheus does, checked."""
    try:
        result = json.loads(body)["data"]["result"]
    except (ValueError, KeyError, TypeError) as error:
        raise _not_prometheus(url, f"{type(error).__name__}: {error}") from error
    if not isinstance(result, list) or not all(_is_series(item) for item in result):
        raise _not_prometheus(url, f"no range-query matrix in {str(result)[:200]!r}")
    return result


def _cause(error: requests.exceptions.RequestException) -> str:
    """The reason a request failed, without the encoded query urllib3 puts first: a
    refused connection, a name that does not resolve, a timeout, a TLS failure."""
    reason = getattr(error.args[0], "reason", None) if error.args else None
    text = str(reason if reason is not None else error)
    text = re.sub(r"^\w*Connection\w*\([^)]*\): ", "", text)  # urllib3's pool, host and port
    return text.removeprefix("Failed to establish a new connection: ").strip("\"'")


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
