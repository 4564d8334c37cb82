"""The operations a TLS connection costs the client, in the energy model's vocabulary
(docs/energy-model.md prices them)."""

from __future__ import annotations

from iotsecbench.security.tls.observe import NegotiatedTls
from iotsecbench.security.tls.profile import (
    CERTIFICATE_TYPES,
    TLS12_DHE_GROUP,
    TlsProfile,
    expand_tls12_ciphers,
)

# Client-side key-exchange operations per group, in the energy vocabulary where it has names.
_GROUP_OPERATIONS = {
    "secp256r1": ("ecdh-p256-keygen", "ecdh-p256-derive"),
    "secp384r1": ("ecdh-p384-keygen", "ecdh-p384-derive"),
    "secp521r1": ("ecdh-p521-keygen", "ecdh-p521-derive"),
    "x25519": ("x25519-keygen", "x25519-derive"),
    "x448": ("x448-keygen", "x448-derive"),
    "X25519MLKEM768": ("x25519-keygen", "x25519-derive", "mlkem768-keygen", "mlkem768-decaps"),
    "SecP256r1MLKEM768": (
        "ecdh-p256-keygen",
        "ecdh-p256-derive",
        "mlkem768-keygen",
        "mlkem768-decaps",
    ),
    "SecP384r1MLKEM1024": (
        "ecdh-p384-keygen",
        "ecdh-p384-derive",
        "mlkem1024-keygen",
        "mlkem1024-decaps",
    ),
    "MLKEM512": ("mlkem512-keygen", "mlkem512-decaps"),
    "MLKEM768": ("mlkem768-keygen", "mlkem768-decaps"),
    "MLKEM1024": ("mlkem1024-keygen", "mlkem1024-decaps"),
}
_SIGNATURE_CERTIFICATES = ("ecdsa-p256", "ed25519", "mldsa44", "mldsa65")


def _verify_operation(certificate: str) -> str:
    if certificate in _SIGNATURE_CERTIFICATES:
        return f"{certificate}-verify"
    return f"{certificate}-public"


def _sign_operation(certificate: str) -> str:
    if certificate in _SIGNATURE_CERTIFICATES:
        return f"{certificate}-sign"
    return f"{certificate}-private"


def handshake_operations(negotiated: NegotiatedTls, certificate: str) -> list[tuple[str, int]]:
    """Public-key operations the *client* performed in the handshake, one entry per operation.

    Assumptions (the lab's PKI, not facts read from the connection):

    * key exchange: ECDHE/DHE on ``negotiated.group`` costs one keygen and one derive (an
      ML-KEM group costs an ML-KEM keygen and decapsulation, beside a hybrid's ECDH); with
      no group in TLS 1.2 the suite is static RSA key transport: one RSA public-key
      encryption;
    * the server's handshake signature (ServerKeyExchange in 1.2, CertificateVerify in 1.3)
      is one verification with the server's ``certificate`` key type;
    * every certificate below the root (``server_certificates_sent`` − 1: the lab's server
      sends the root too; 1 when unknown) was issued with the *same* key type as
      ``certificate``: one verification each. The anchor's self-signature is not checked
      (OpenSSL trusts anchors as configured);
    * with mutual authentication the client key has the same type: one signature;
    * a resumed session skips certificates and signatures; TLS 1.3 resumption still pays
      the (EC)DHE of ``group`` when one was negotiated;
    * hashing, HKDF/PRF and record protection are not counted here (bulk costs are logged
      per record elsewhere); unknown groups yield ``<group>-keygen``/``-derive`` names that
      the energy model reports as unmodelled.
    """
    if certificate not in CERTIFICATE_TYPES:
        raise ValueError(f"certificate must be one of {', '.join(CERTIFICATE_TYPES)}")
    operations: list[tuple[str, int]] = []
    if negotiated.group is not None:
        names = _GROUP_OPERATIONS.get(
            negotiated.group, (f"{negotiated.group}-keygen", f"{negotiated.group}-derive")
        )
        operations.extend((name, 1) for name in names)
    elif negotiated.version == "1.2" and not negotiated.resumed:
        if not certificate.startswith("rsa"):
            raise ValueError("static RSA key transport needs an RSA certificate")
        operations.append((f"{certificate}-public", 1))  # encrypt the premaster secret
    if negotiated.resumed:
        return operations
    if negotiated.signature_algorithm is not None:
        operations.append((_verify_operation(certificate), 1))  # server's handshake signature
    below_root = max(1, (negotiated.server_certificates_sent or 2) - 1)
    for _ in range(below_root):  # issuer signatures
        operations.append((_verify_operation(certificate), 1))
    if negotiated.client_certificate_sent:
        operations.append((_sign_operation(certificate), 1))
    return operations


def record_operations(negotiated: NegotiatedTls, record_bytes: int) -> list[tuple[str, int]]:
    """Bulk operations to protect (or unprotect) ``record_bytes`` of application data.

    AEAD suites (GCM, CCM, ChaCha20-Poly1305) are one pass of their AEAD; CBC suites are
    AES-CBC plus an HMAC over the same bytes (MAC-then-encrypt, SHA-1/SHA-256/SHA-384 all
    priced as HMAC-SHA256 — an approximation the energy model documents). Unknown suites
    return ``<cipher>-record`` so the model reports them as unmodelled instead of free.
    """
    cipher = negotiated.cipher.upper()
    if "CHACHA20" in cipher:
        return [("chacha20-poly1305", record_bytes)]
    if "GCM" in cipher:
        return [("aes-gcm", record_bytes)]
    if "CBC" in cipher or ("AES" in cipher and "SHA" in cipher and "CCM" not in cipher):
        return [("aes-cbc", record_bytes), ("hmac-sha256", record_bytes)]
    return [(f"{negotiated.cipher.lower()}-record", record_bytes)]


def expected_negotiation(profile: TlsProfile) -> NegotiatedTls:
    """What a connection of ``profile`` negotiates against the lab's broker, as far as the
    priced operations depend on it (``handshake_operations``): the group (the profile's, or
    X25519 — OpenSSL's first preference — for an ECDHE exchange left open; the RFC 3526
    group matching the certificate for TLS 1.2 DHE; none for static RSA key transport), a
    server signature unless the key is transported, the chain the lab's server sends, the
    client's certificate when mutual, a resumed session when the profile resumes. For
    ``predict handshake``: the operations without a connection; a measured handshake reads
    them from the wire instead (``negotiated``)."""
    group = profile.group
    signed = True
    if profile.version == "1.2" and group is None and profile.ciphers is not None:
        exchanges = {suite["kea"] for suite in expand_tls12_ciphers(profile.ciphers)}
        if exchanges == {"kx-rsa"}:
            signed = False  # static RSA key transport: no group, no server signature
        elif "kx-ecdhe" not in exchanges and "kx-dhe" in exchanges:
            group = TLS12_DHE_GROUP.get(profile.certificate)
    if signed and group is None:
        group = "x25519"
    return NegotiatedTls(
        version=profile.version,
        cipher=profile.ciphers.split(":")[0] if profile.ciphers else "",
        cipher_bits=128,
        group=group if signed else None,
        signature_algorithm=profile.certificate if signed else None,
        resumed=profile.resumption,
        client_certificate_sent=profile.mutual,
        certificate=profile.certificate,
        server_certificates_sent=None if profile.resumption else profile.chain_length + 1,
    )


def expected_handshake_operations(profile: TlsProfile) -> list[tuple[str, int]]:
    """The client's priced operations of a ``profile`` handshake, from the profile alone:
    ``handshake_operations`` of its ``expected_negotiation`` (hashing, HKDF and the record
    layer are not among them; the device model's ``handshake_overhead`` stands for them)."""
    return handshake_operations(expected_negotiation(profile), profile.certificate)


def timed_handshake_operations(version: str, group: str, signature: str) -> list[tuple[str, int]]:
    """The priced operations of a handshake timed on a device and described by its TLS
    version, key-exchange group and the server certificate's signature algorithm (a row of
    ``calibrate --handshakes``' CSV): group ``none`` is TLS 1.2 RSA key transport, signature
    ``none`` a resumed handshake (no certificate checked). ``SpecError`` for what no TLS
    profile names."""
    from iotsecbench.security.tls.profile import parse_profile

    parts = [f"tls{version}"]
    if group.lower() == "none":
        parts.append("AES128-SHA256")  # a static-RSA suite: no group, no server signature
    else:
        parts.append(group)
    parts.append("resume" if signature.lower() == "none" else signature)
    return expected_handshake_operations(parse_profile("/".join(parts)))
