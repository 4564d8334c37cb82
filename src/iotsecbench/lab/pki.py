"""A throw-away public-key infrastructure per experiment: CA, server and client certificates.

Generated with ``cryptography``; the CA signs with the same key type as the leaf it issues,
so an ``ecdsa-p256`` configuration is ECDSA end to end. Private keys are written with mode
0600 into a 0700 directory (RELIABILITY.md, security hygiene).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from iotsecbench.files import private_directory, write_secret

KEY_TYPES = ("rsa2048", "rsa3072", "ecdsa-p256")


@dataclass(frozen=True)
class CertificateSet:
    """Paths of one key type's CA, server and client credentials (PEM)."""

    key_type: str
    ca_file: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _new_key(key_type: str) -> rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey:
    if key_type == "rsa2048":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if key_type == "rsa3072":
        return rsa.generate_private_key(public_exponent=65537, key_size=3072)
    if key_type == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    raise ValueError(f"unknown key type {key_type!r}; known: {', '.join(KEY_TYPES)}")


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "iotsecbench lab"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _pem_key(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _issue(
    subject: str,
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey,
    *,
    is_ca: bool,
    usage: x509.ObjectIdentifier | None,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    if is_ca:
        builder = builder.add_extension(
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
    else:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        if usage is not None:
            builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def create_certificates(directory: Path, key_type: str = "rsa2048") -> CertificateSet:
    """Create (or reuse, if complete) the CA, server and client credentials of ``key_type``."""
    folder = private_directory(directory / key_type)
    paths = CertificateSet(
        key_type,
        folder / "ca.pem",
        folder / "server.pem",
        folder / "server.key",
        folder / "client.pem",
        folder / "client.key",
    )
    if all(
        getattr(paths, f).exists()
        for f in ("ca_file", "server_cert", "server_key", "client_cert", "client_key")
    ):
        return paths
    for stale in folder.iterdir():  # a half-made set from an interrupted run: start over
        stale.unlink()
    ca_key = _new_key(key_type)
    ca_name = _name(f"iotsecbench {key_type} CA")
    ca_cert = _issue(f"iotsecbench {key_type} CA", ca_key, ca_name, ca_key, is_ca=True, usage=None)
    server_key = _new_key(key_type)
    server_cert = _issue(
        "localhost", server_key, ca_name, ca_key, is_ca=False, usage=ExtendedKeyUsageOID.SERVER_AUTH
    )
    client_key = _new_key(key_type)
    client_cert = _issue(
        "iotsecbench device",
        client_key,
        ca_name,
        ca_key,
        is_ca=False,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    paths.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths.server_cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    paths.client_cert.write_bytes(client_cert.public_bytes(serialization.Encoding.PEM))
    write_secret(paths.server_key, _pem_key(server_key))
    write_secret(paths.client_key, _pem_key(client_key))
    return paths
