"""--self-signed-certs: the pair made at start serves the names the API server calls, the
caBundle keeps every replica's CA, and flags that contradict it are exit 2."""

from __future__ import annotations

import datetime as dt
import ssl
import tempfile
from pathlib import Path

import pytest
from cryptography import x509
from typer.testing import CliRunner

from admission.self_signed import (
    BUNDLE_KEEPS,
    holds,
    issue,
    merged_bundle,
    service_hosts,
    write_pair,
)
from tailor.cli.main import app
from tests.admission.https import serving_pair
from tests.cli_text import plain


def _handshake(pair: Path, ca_pem: bytes, host: str) -> None:
    """A TLS handshake against the pair in `pair` (tls.crt / tls.key), checked as the API
    server checks it: chain to `ca_pem`, name `host`. ssl.SSLError when it fails."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(pair / "tls.crt", pair / "tls.key")
    client = ssl.create_default_context(cadata=ca_pem.decode())
    inbound, outbound = ssl.MemoryBIO(), ssl.MemoryBIO()
    back_in, back_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    serving = server.wrap_bio(inbound, back_out, server_side=True)
    calling = client.wrap_bio(back_in, outbound, server_hostname=host)
    for _ in range(10):
        done = 0
        for side, pending_out, peer_in in (
            (calling, outbound, inbound),
            (serving, back_out, back_in),
        ):
            try:
                side.do_handshake()
                done += 1
            except ssl.SSLWantReadError:
                pass
            peer_in.write(pending_out.read())
        if done == 2:
            return
    raise AssertionError("the handshake did not finish")


def test_the_pair_made_serves_the_services_names_and_no_other(tmp_path: Path) -> None:
    hosts = service_hosts("ops", "tailor-admission")
    ca_pem, cert_pem, key_pem = issue(hosts)
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(key_pem)
    assert hosts[0] == "tailor-admission.ops.svc"  # what the API server calls
    for host in hosts:
        _handshake(tmp_path, ca_pem, host)
    with pytest.raises(ssl.SSLCertVerificationError, match="match"):
        _handshake(tmp_path, ca_pem, "tailor-admission.kube-tailor.svc")
    other_ca, _, _ = issue(hosts)  # another start's CA does not vouch for this pair
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(tmp_path, other_ca, hosts[0])
    leaf = x509.load_pem_x509_certificate(cert_pem)
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_an_ip_address_host_is_an_ip_san_and_the_files_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read once per process
    pair = write_pair(("127.0.0.1",))
    assert pair.folder.parent == tmp_path
    assert pair.folder.stat().st_mode & 0o077 == 0
    assert pair.key_file.stat().st_mode & 0o077 == 0
    _handshake(pair.folder, pair.ca_file.read_bytes(), "127.0.0.1")
    pair.remove()
    assert not pair.folder.exists()


def test_the_bundle_keeps_other_replicas_cas_drops_expired_and_caps_the_rest() -> None:
    now = dt.datetime.now(dt.UTC)
    ours = issue(("a",), now)[0]
    theirs = [issue(("a",), now - dt.timedelta(minutes=i))[0] for i in range(1, 3)]
    expired = issue(("a",), now - dt.timedelta(days=3651))[0]
    bundle = merged_bundle(b"".join([theirs[0], expired, theirs[1]]), ours, now)
    assert [holds(bundle, pem) for pem in (ours, *theirs, expired)] == [True, True, True, False]
    assert bundle.startswith(ours)
    assert merged_bundle(bundle, ours, now) == bundle  # ours is not added twice
    assert merged_bundle(b"not a certificate", ours, now) == ours
    assert merged_bundle(b"", ours, now) == ours
    many = [issue(("a",), now - dt.timedelta(hours=i))[0] for i in range(1, BUNDLE_KEEPS + 2)]
    capped = merged_bundle(b"".join(reversed(many)), ours, now)
    kept = [holds(capped, pem) for pem in many]
    assert kept == [True] * (BUNDLE_KEEPS - 1) + [False, False]  # the newest others stay


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--tls-cert", "{cert}"], "--self-signed-certs makes the certificate"),
        (["--ca-file", "{ca}"], "--self-signed-certs makes the certificate"),
        (["--webhook-url", "http://127.0.0.1/mutate"], "https:// URL"),
        (["--webhook-service", "tailor-admission"], "NAMESPACE/NAME"),
        ([], "--kubeconfig"),  # refused after the pair was made
    ],
)
def test_self_signed_flags_that_cannot_work_are_exit_2_and_leave_no_key_behind(
    flags: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    ca, pair = serving_pair(tmp_path / "given")
    files = {"{cert}": str(pair.cert_file), "{ca}": str(ca.folder / "ca.crt")}
    args = ["admission", "--self-signed-certs", "--metrics-port", "0"]
    args += ["--kubeconfig", str(tmp_path / "absent")]
    result = CliRunner().invoke(app, [*args, *(files.get(flag, flag) for flag in flags)])
    assert result.exit_code == 2, result.output
    assert message in plain(result.output)
    assert list(scratch.iterdir()) == []  # a pair made before the refusal is removed
