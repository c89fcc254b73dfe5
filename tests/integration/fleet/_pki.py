"""Throwaway certificates for the TLS and mTLS tests: a CA, a server certificate for
127.0.0.1/localhost, a client certificate, and an unrelated CA (made with ``cryptography``)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _cert(
    name: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    san: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer_name, issuer_key = issuer or (subject, key)
    now = dt.datetime.now(tz=dt.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if san:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def make_pki(d: Path) -> Pki:
    """Write a fresh set of keys and certificates into ``d``."""
    ca_key, other_key = _key(), _key()
    ca = _cert("fleet test CA", ca_key, None, ca=True)
    other = _cert("some other CA", other_key, None, ca=True)
    server_key, client_key = _key(), _key()
    san: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    server = _cert("fleet-api", server_key, (ca.subject, ca_key), san=san)
    client = _cert("fleet-cli", client_key, (ca.subject, ca_key))
    return Pki(
        ca=_write_cert(d / "ca.pem", ca),
        server_cert=_write_cert(d / "server.pem", server),
        server_key=_write_key(d / "server.key", server_key),
        client_cert=_write_cert(d / "client.pem", client),
        client_key=_write_key(d / "client.key", client_key),
        other_ca=_write_cert(d / "other-ca.pem", other),
    )
