"""A throw-away public-key infrastructure per experiment: CA, server and client certificates.

Generated with ``cryptography``; the CA signs with the same key type as the leaf it issues,
so an ``ecdsa-p256`` configuration is ECDSA end to end (``ed25519``, ``mldsa44`` and
``mldsa65`` likewise: ML-DSA certificates follow draft-ietf-lamps-dilithium-certificates, as
``cryptography`` writes them). A chain of
length N is root CA → N−1 intermediate CAs → server certificate; the server's certificate
file holds the leaf, the intermediates and the root — what it sends, N + 1 certificates:
for a bare leaf OpenSSL would add the root from mosquitto's ``cafile`` anyway (automatic
chain building), so the root is listed explicitly to make every length behave alike. The
CA file holds only the root (what clients trust). Client certificates are issued by the
root. Private keys are written with mode 0600 into a 0700 directory (docs/reliability.md,
security hygiene).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from iotsecbench.files import private_directory, write_secret
from iotsecbench.lab.network import ADDRESSES

NETWORK_BROKER_ADDRESS = ADDRESSES["broker"]

KEY_TYPES = ("rsa2048", "rsa3072", "ecdsa-p256", "ed25519", "mldsa44", "mldsa65")
PrivateKey = (
    rsa.RSAPrivateKey
    | ec.EllipticCurvePrivateKey
    | ed25519.Ed25519PrivateKey
    | mldsa.MLDSA44PrivateKey
    | mldsa.MLDSA65PrivateKey
)


@dataclass(frozen=True)
class CertificateSet:
    """Paths of one key type's CA, server and client credentials (PEM)."""

    key_type: str
    ca_file: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _new_key(key_type: str) -> PrivateKey:
    if key_type == "rsa2048":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    if key_type == "rsa3072":
        return rsa.generate_private_key(public_exponent=65537, key_size=3072)
    if key_type == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    if key_type == "mldsa44":
        return mldsa.MLDSA44PrivateKey.generate()
    if key_type == "mldsa65":
        return mldsa.MLDSA65PrivateKey.generate()
    raise ValueError(f"unknown key type {key_type!r}; known: {', '.join(KEY_TYPES)}")


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "iotsecbench lab"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _pem_key(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _issue(
    subject: str,
    key: PrivateKey,
    issuer: x509.Name,
    issuer_key: PrivateKey,
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
            # 127.0.0.1 for loopback runs, the broker host's address for emulated networks.
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address(NETWORK_BROKER_ADDRESS)),
                ]
            ),
            critical=False,
        )
        if usage is not None:
            builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    # Ed25519 and ML-DSA sign the message itself (RFC 8410, FIPS 204): no separate hash.
    pure = (ed25519.Ed25519PrivateKey, mldsa.MLDSA44PrivateKey, mldsa.MLDSA65PrivateKey)
    digest = None if isinstance(issuer_key, pure) else hashes.SHA256()
    return builder.sign(issuer_key, digest)


def create_certificates(
    directory: Path, key_type: str = "rsa2048", chain_length: int = 1
) -> CertificateSet:
    """Create (or reuse, if complete) the CA, server and client credentials of ``key_type``.

    ``chain_length`` counts the certificates below the root: 1 = the server's own, issued
    by the root; 2 and 3 add one or two intermediate CAs.
    """
    if chain_length not in (1, 2, 3):
        raise ValueError(f"chain_length must be 1, 2 or 3, got {chain_length!r}")
    name = key_type if chain_length == 1 else f"{key_type}-chain{chain_length}"
    folder = private_directory(directory / name)
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
    issuer_name, issuer_key = ca_name, ca_key
    intermediates = []
    for level in range(1, chain_length):
        key = _new_key(key_type)
        subject = f"iotsecbench {key_type} intermediate CA {level}"
        intermediates.append(_issue(subject, key, issuer_name, issuer_key, is_ca=True, usage=None))
        issuer_name, issuer_key = _name(subject), key
    server_key = _new_key(key_type)
    server_cert = _issue(
        "localhost",
        server_key,
        issuer_name,
        issuer_key,
        is_ca=False,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
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
    pem = serialization.Encoding.PEM
    paths.ca_file.write_bytes(ca_cert.public_bytes(pem))
    # Leaf first, then each issuer upwards to the root (RFC 8446 §4.4.2).
    chain = [server_cert, *reversed(intermediates), ca_cert]
    paths.server_cert.write_bytes(b"".join(c.public_bytes(pem) for c in chain))
    paths.client_cert.write_bytes(client_cert.public_bytes(pem))
    write_secret(paths.server_key, _pem_key(server_key))
    write_secret(paths.client_key, _pem_key(client_key))
    return paths
