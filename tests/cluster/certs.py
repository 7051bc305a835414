"""Certificates for a throw-away control plane, made with `cryptography`.

The API server only talks TLS and authenticates the admin by client
certificate, so each cluster gets its own CA, a serving certificate for the
loopback address, an admin client certificate in group system:masters and a
service-account key pair. Webhook tests can reuse `CertificateAuthority` to
issue the serving certificate the API server will trust through `caBundle`.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=365)
_CLOCK_SKEW = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class KeyPair:
    """Paths of a PEM certificate and its private key."""

    cert_file: Path
    key_file: Path


def _write_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


class CertificateAuthority:
    """A CA kept on disk in `folder` (ca.crt / ca.key) that issues leaf certificates."""

    def __init__(self, folder: Path, common_name: str = "kube-tailor-test-ca") -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        subject = _name(common_name)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _CLOCK_SKEW)
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        self.pair = KeyPair(folder / "ca.crt", folder / "ca.key")
        self.pair.cert_file.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))
        _write_key(self._key, self.pair.key_file)

    @property
    def cert_pem(self) -> bytes:
        """The CA certificate, e.g. for a webhook's `caBundle`."""
        return self._cert.public_bytes(serialization.Encoding.PEM)

    def issue(
        self,
        name: str,
        *,
        common_name: str,
        organization: str | None = None,
        hosts: tuple[str, ...] = (),
        server: bool = False,
        client: bool = False,
    ) -> KeyPair:
        """Issue `name`.crt / `name`.key signed by this CA; hosts become SANs."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organization))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _CLOCK_SKEW)
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()),
                critical=False,
            )
        )
        if hosts:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_san(host) for host in hosts]), critical=False
            )
        cert = builder.sign(self._key, hashes.SHA256())
        pair = KeyPair(self.folder / f"{name}.crt", self.folder / f"{name}.key")
        pair.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(key, pair.key_file)
        return pair


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def write_service_account_keys(folder: Path) -> KeyPair:
    """RSA key pair the API server signs (and checks) service-account tokens with.

    Returned as KeyPair(cert_file=public key, key_file=private key).
    """
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = folder / "sa.pub"
    private = folder / "sa.key"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    _write_key(key, private)
    return KeyPair(public, private)
