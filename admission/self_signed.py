"""A self-signed CA and serving certificate made at start (`tailor admission --self-signed-certs`).

For clusters without cert-manager, and without anyone to run openssl and paste a caBundle:
the webhook makes its own CA and certificate, serves them, and registers the CA in its own
MutatingWebhookConfiguration (admission.registration, by name, never creating one).

The CA signs the serving certificate and its key is then dropped, never written to a
file: a stolen pod cannot sign anything else with it. Each start (each
replica, each restart) makes a new pair; the registration's caBundle therefore holds the
CA of every replica serving (see `merged_bundle`). The pair is valid for ten years, as
upstream's gencerts.sh makes its own: a restart renews it, and rotating on a schedule is
what cert-manager is for.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=3650)
CLOCK_SKEW = dt.timedelta(minutes=5)  # another node's clock a little behind still accepts it
# CAs kept in the caBundle besides the replica's own: the newest, so a replica that
# restarts often cannot grow the registration without bound, and one whose CA fell out
# puts it back at its next check
BUNDLE_KEEPS = 16


@dataclass(frozen=True)
class SelfSignedPair:
    """The PEM files of one start: the CA (for the caBundle), the certificate and its key."""

    folder: Path
    ca_file: Path
    cert_file: Path
    key_file: Path

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def service_hosts(namespace: str, name: str) -> tuple[str, ...]:
    """The names the API server may call a Service by (it uses NAME.NAMESPACE.svc)."""
    return (
        f"{name}.{namespace}.svc",
        f"{name}.{namespace}.svc.cluster.local",
        f"{name}.{namespace}",
    )


def issue(hosts: tuple[str, ...], now: dt.datetime | None = None) -> tuple[bytes, bytes, bytes]:
    """(CA PEM, certificate PEM, key PEM): a new CA and a serving certificate it signed for
    `hosts` (DNS names or IP addresses), both ECDSA P-256."""
    now = now or dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(f"kube-tailor-admission self-signed CA {x509.random_serial_number():x}"[:64])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(sign_certificates=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        _builder(_name(hosts[0]), ca_name, key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(sign_certificates=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([_host(h) for h in hosts]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    pem = serialization.Encoding.PEM
    return ca.public_bytes(pem), leaf.public_bytes(pem), key_pem


def write_pair(hosts: tuple[str, ...]) -> SelfSignedPair:
    """A new pair in a private folder under $TMPDIR (a pod's root filesystem is read-only:
    the chart mounts a memory-backed emptyDir at /tmp), readable by this user only."""
    ca_pem, cert_pem, key_pem = issue(hosts)
    folder = Path(tempfile.mkdtemp(prefix="tailor-admission-tls-"))
    pair = SelfSignedPair(folder, folder / "ca.crt", folder / "tls.crt", folder / "tls.key")
    pair.key_file.touch(mode=0o600)
    pair.key_file.write_bytes(key_pem)
    pair.cert_file.write_bytes(cert_pem)
    pair.ca_file.write_bytes(ca_pem)
    return pair


def merged_bundle(current: bytes, ours: bytes, now: dt.datetime | None = None) -> bytes:
    """The caBundle with our CA first, then the newest of the others still valid.

    Replicas each register their own CA in the one registration: overwriting would cut off
    every other replica. Expired certificates and what does not parse are dropped.
    """
    now = now or dt.datetime.now(dt.UTC)
    mine = x509.load_pem_x509_certificate(ours)
    try:
        found = x509.load_pem_x509_certificates(current) if current.strip() else []
    except ValueError:  # not PEM at all: nothing in it could verify a replica
        found = []
    others = [c for c in found if c != mine and c.not_valid_after_utc > now]
    others.sort(key=lambda c: c.not_valid_before_utc, reverse=True)
    pem = serialization.Encoding.PEM
    return b"".join(c.public_bytes(pem) for c in [mine, *others[: BUNDLE_KEEPS - 1]])


def holds(bundle: bytes, ca_pem: bytes) -> bool:
    """Whether `bundle` has the CA certificate `ca_pem` in it."""
    try:
        return x509.load_pem_x509_certificate(ca_pem) in x509.load_pem_x509_certificates(bundle)
    except ValueError:
        return False


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _host(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePublicKey, now: dt.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(now + VALIDITY)
    )


def _usage(sign_certificates: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=sign_certificates,
        crl_sign=sign_certificates,
        encipher_only=False,
        decipher_only=False,
    )
