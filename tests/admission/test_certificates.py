"""A rotated serving certificate is presented to new connections once `check()` sees it.

The files are swapped the way the kubelet updates a mounted Secret (a new folder,
then the `..data` symlink replaced), against a server on a real socket.
"""

from __future__ import annotations

import http.client
import logging
import os
import ssl
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from admission import edge
from tests.admission.https import SecretMount, call, der, presented, serve, serving_pair
from tests.admission.test_admit import View
from tests.cluster.certs import CertificateAuthority, KeyPair

STILL = "still serving the previous certificate"


@pytest.fixture
def two_cas(tmp_path: Path) -> tuple[tuple[CertificateAuthority, KeyPair], ...]:
    return serving_pair(tmp_path / "a"), serving_pair(tmp_path / "b")


def test_a_rotated_secret_is_presented_to_new_connections_once_checked(
    tmp_path: Path,
    two_cas: tuple[tuple[CertificateAuthority, KeyPair], ...],
    caplog: pytest.LogCaptureFixture,
) -> None:
    (ca_a, a), (ca_b, b) = two_cas
    mount = SecretMount(tmp_path / "mount", a)
    served = serve(View([]), tmp_path, issued=(ca_a, mount.pair))
    caplog.set_level(logging.INFO, logger="tailor.admission")
    both = ssl.create_default_context(cafile=str(ca_a.pair.cert_file))
    both.load_verify_locations(cafile=str(ca_b.pair.cert_file))
    kept = http.client.HTTPSConnection("127.0.0.1", served.server.port, context=both)
    try:
        kept.request("GET", "/healthz")
        assert kept.getresponse().read() == b"ok\n"
        assert served.certificates.check() is False  # unchanged files: nothing to do
        mount.publish_pair(b)
        assert presented(served.server.port, ca_a) == der(a)  # not before the check
        assert served.certificates.check() is True
        assert presented(served.server.port, ca_b) == der(b)
        with pytest.raises(ssl.SSLCertVerificationError):
            presented(served.server.port, ca_a)
        assert call(served.url + "/healthz", ca_b) == (200, "ok\n")
        # the idle connection open across the swap was closed with the old granian worker
        # (admission.edge): its client connects again and gets B
        with pytest.raises(http.client.RemoteDisconnected):
            kept.request("GET", "/healthz")
            kept.getresponse()
        kept.close()
        kept.request("GET", "/healthz")
        assert kept.getresponse().read() == b"ok\n"
        assert kept.sock is not None
        assert kept.sock.getpeercert(binary_form=True) == der(b)
        assert served.certificates.check() is False
    finally:
        kept.close()
        served.server.stop()
    assert [(r.levelname, r.message) for r in caplog.records] == [
        ("INFO", f"serving the renewed certificate from {mount.pair.cert_file}")
    ]
    assert served.certificates.error is None


def _half(pem: bytes) -> bytes:
    return pem[: len(pem) // 2]


@pytest.mark.parametrize(
    ("case", "blamed", "why"),
    [
        ("half-written certificate", "tls.crt", "holds no readable PEM certificate"),
        ("key of another pair", "tls.key", "is not the key of the certificate in"),
        ("garbage key", "tls.key", "holds no readable PEM private key"),
        ("missing key", "tls.key", "cannot read"),
    ],
)
def test_an_unusable_replacement_keeps_the_old_certificate_until_fixed(
    tmp_path: Path,
    two_cas: tuple[tuple[CertificateAuthority, KeyPair], ...],
    caplog: pytest.LogCaptureFixture,
    case: str,
    blamed: str,
    why: str,
) -> None:
    (ca_a, a), (ca_b, b) = two_cas
    cert_b, key_b = b.cert_file.read_bytes(), b.key_file.read_bytes()
    bad: dict[str, tuple[bytes, bytes | None]] = {
        "half-written certificate": (_half(cert_b), key_b),
        "key of another pair": (cert_b, a.key_file.read_bytes()),
        "garbage key": (cert_b, b"not a key\n"),
        "missing key": (cert_b, None),
    }
    mount = SecretMount(tmp_path / "mount", a)
    served = serve(View([]), tmp_path, issued=(ca_a, mount.pair))
    caplog.set_level(logging.INFO, logger="tailor.admission")
    try:
        mount.publish(*bad[case])
        assert served.certificates.check() is False
        assert served.certificates.check() is False  # same bad content: not logged again
        assert presented(served.server.port, ca_a) == der(a)
        assert call(served.url + "/healthz", ca_a) == (200, "ok\n")
        error = served.certificates.error
        assert error is not None
        assert f"{mount.folder}/{blamed}" in error
        assert why in error
        mount.publish(b"-----BEGIN CERTIFICATE-----\n", key_b)  # another bad content
        assert served.certificates.check() is False
        assert presented(served.server.port, ca_a) == der(a)
        mount.publish_pair(b)
        assert served.certificates.check() is True
        assert presented(served.server.port, ca_b) == der(b)
    finally:
        served.server.stop()
    assert served.certificates.error is None
    assert [(r.levelname, r.message) for r in caplog.records] == [
        ("ERROR", f"{error}; {STILL}"),
        ("ERROR", f"{mount.pair.cert_file} holds no readable PEM certificate; {STILL}"),
        ("INFO", f"serving the renewed certificate from {mount.pair.cert_file}"),
    ]


def test_without_memfd_the_pair_is_staged_in_a_private_folder_and_removed(
    tmp_path: Path,
    two_cas: tuple[tuple[CertificateAuthority, KeyPair], ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (ca_a, a), (ca_b, b) = two_cas
    staging = tmp_path / "staging"
    staging.mkdir()
    monkeypatch.delattr(os, "memfd_create")
    monkeypatch.setattr(tempfile, "tempdir", str(staging))
    mount = SecretMount(tmp_path / "mount", a)
    served = serve(View([]), tmp_path, issued=(ca_a, mount.pair))
    try:
        mount.publish_pair(b)
        assert served.certificates.check() is True
        assert presented(served.server.port, ca_b) == der(b)
    finally:
        served.server.stop()
    assert list(staging.iterdir()) == []


def test_the_check_can_run_on_the_servers_loop_thread(tmp_path: Path) -> None:
    served = serve(View([]), tmp_path)
    try:
        assert served.server.call(threading.current_thread).name == "tailor-webhook"
        assert served.server.call(served.certificates.check) is False
    finally:
        served.server.stop()


class _Refuses:
    """Stands in for a granian call that fails, `times` times, then does the real one."""

    def __init__(self, real: Any, times: int) -> None:
        self.real, self.left = real, times

    def __call__(self, *args: Any) -> Any:
        if self.left > 0:
            self.left -= 1
            raise RuntimeError("granian refused")
        return self.real(*args)


@pytest.mark.parametrize("failing", ["building the new worker", "serving with it"])
def test_a_renewal_the_server_cannot_serve_keeps_the_old_pair_answering_and_retries(
    tmp_path: Path,
    two_cas: tuple[tuple[CertificateAuthority, KeyPair], ...],
    monkeypatch: pytest.MonkeyPatch,
    failing: str,
) -> None:
    (ca_a, a), (ca_b, b) = two_cas
    mount = SecretMount(tmp_path / "mount", a)
    served = serve(View([]), tmp_path, issued=(ca_a, mount.pair))
    try:
        if failing == "building the new worker":
            monkeypatch.setattr(edge, "_RSGI_WORKER", _Refuses(edge._RSGI_WORKER, 1))
        else:
            refuses = _Refuses(edge._Granian.serve, 1)
            monkeypatch.setattr(edge._Granian, "serve", lambda *args: refuses(*args))
        mount.publish_pair(b)
        assert served.certificates.check() is False
        error = served.certificates.error
        assert error is not None and "could not be served" in error and "refused" in error
        assert served.certificates.pem == (a.cert_file.read_bytes(), a.key_file.read_bytes())
        assert presented(served.server.port, ca_a) == der(a)
        assert call(served.url + "/healthz", ca_a) == (200, "ok\n")
        assert served.certificates.check() is True  # retried: the refusal is spent
        assert presented(served.server.port, ca_b) == der(b)
        assert call(served.url + "/healthz", ca_b) == (200, "ok\n")
    finally:
        served.server.stop()
