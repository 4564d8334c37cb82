"""security.tls.wire against an independent truth: OpenSSL's own handshake (Python's ssl, client
and server over memory BIOs, no socket) and OpenSSL's own key log. The streams it wrote must
split into the records and messages it sent, TLS 1.3's protected records must open with the
secrets it logged, and the transcript must give what the connection negotiated."""

from __future__ import annotations

import contextlib
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from iotsecbench.lab.pki import create_certificates
from iotsecbench.security.tls.observe import PROTECTED_RECORD, negotiated_on_the_wire
from iotsecbench.security.tls.wire import (
    WireError,
    hkdf_expand_label,
    on_the_wire_messages,
    read_transcript,
)


def _handshake(
    tmp_path: Path,
    key_type: str,
    version: ssl.TLSVersion,
    suite: str | None,
    *,
    mutual: bool = False,
    application_data: bool = True,
):
    """(client stream, server stream, the key log's secrets, the server's leaf DER)."""
    certs = create_certificates(tmp_path / "pki", key_type)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(certs.server_cert, certs.server_key)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(certs.ca_file)
    if mutual:
        server.verify_mode = ssl.CERT_REQUIRED
        server.load_verify_locations(certs.ca_file)
        client.load_cert_chain(certs.client_cert, certs.client_key)
    client.keylog_filename = str(tmp_path / "keys.log")
    for context in (server, client):
        context.minimum_version = context.maximum_version = version
    if suite is not None and version == ssl.TLSVersion.TLSv1_2:
        client.set_ciphers(suite)
    bios = [ssl.MemoryBIO() for _ in range(4)]
    c = client.wrap_bio(bios[0], bios[1], server_hostname="localhost")
    s = server.wrap_bio(bios[2], bios[3], server_side=True)
    sent, received = bytearray(), bytearray()
    for _ in range(10):
        for side in (c, s):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        out = bios[1].read()
        sent += out
        bios[2].write(out)
        back = bios[3].read()
        received += back
        bios[0].write(back)
    if application_data:
        c.write(b"hello")  # application data after the handshake: not a handshake message
        sent += bios[1].read()
    secrets = {}
    for line in (tmp_path / "keys.log").read_text().splitlines():
        if line and not line.startswith("#"):
            label, _client_random, value = line.split()  # NSS key log: LABEL random secret
            secrets[label] = bytes.fromhex(value)
    leaf = x509.load_pem_x509_certificate(certs.server_cert.read_bytes())
    return bytes(sent), bytes(received), secrets, leaf.public_bytes(ssl_der()), c.cipher()[0]


def ssl_der():
    from cryptography.hazmat.primitives.serialization import Encoding

    return Encoding.DER


def test_hkdf_expand_label_rfc8448():
    """RFC 8448 §3: the server handshake traffic key and IV of the simple 1-RTT handshake."""
    from cryptography.hazmat.primitives import hashes

    secret = bytes.fromhex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38")
    assert hkdf_expand_label(secret, "key", 16, hashes.SHA256).hex() == (
        "3fce516009c21727d0f2e4e86ee403bc"
    )
    assert hkdf_expand_label(secret, "iv", 12, hashes.SHA256).hex() == "5d313eb2671276ee13000b30"


@pytest.mark.parametrize("key_type", ["ecdsa-p256", "rsa2048"])
def test_tls13_records_open_with_openssl_key_log(tmp_path, key_type):
    sent, received, secrets, leaf, suite = _handshake(
        tmp_path, key_type, ssl.TLSVersion.TLSv1_3, None
    )
    transcript = read_transcript(sent, received, "1.3", suite, secrets)
    server = [m.message_type for m in transcript.messages if not m.written]
    client = [m.message_type for m in transcript.messages if m.written]
    # ServerHello, EncryptedExtensions, Certificate, CertificateVerify, Finished (then tickets)
    assert server[:5] == [2, 8, 11, 15, 20]
    assert client == [1, 20]  # ClientHello, Finished; the application data is no message
    assert PROTECTED_RECORD not in server + client
    order = [(True, len(sent)), (False, len(received))]
    messages = [m for m in on_the_wire_messages(transcript, order) if m[1] != 4]
    found = negotiated_on_the_wire("1.3", suite, 128, False, messages, [])
    assert found.certificate == key_type
    family = "ecdsa" if key_type == "ecdsa-p256" else "rsa"
    assert found.signature_algorithm.startswith(family)
    assert found.server_certificates_sent == 2  # leaf and root (lab/pki.py)
    certificate = next(m.data for m in transcript.messages if m.message_type == 11)
    assert leaf in certificate


@pytest.mark.parametrize("mutual", [True, False])
def test_tls13_client_certificate_is_seen_in_the_protected_flight(tmp_path, mutual):
    """A stack whose secrets stay inside (Debian's wolfSSL) shows only the sizes of its
    protected records: the client's flight must tell a certificate from none, and agree with
    what the same records say once opened with OpenSSL's key log. The native agents stop
    recording when the handshake ends, so no application data joins the flight."""
    sent, received, secrets, _, suite = _handshake(
        tmp_path, "ecdsa-p256", ssl.TLSVersion.TLSv1_3, None, mutual=mutual, application_data=False
    )
    order = [(True, len(sent)), (False, len(received))]
    sealed = on_the_wire_messages(read_transcript(sent, received, "1.3", suite), order)
    assert any(kind == PROTECTED_RECORD and written for written, kind, _ in sealed)
    by_size = negotiated_on_the_wire("1.3", suite, 128, False, sealed, [])
    opened = on_the_wire_messages(read_transcript(sent, received, "1.3", suite, secrets), order)
    by_content = negotiated_on_the_wire("1.3", suite, 128, False, opened, [])
    assert by_size.client_certificate_sent is by_content.client_certificate_sent is mutual


def test_tls12_keeps_protected_records_by_size(tmp_path):
    sent, received, _, _, suite = _handshake(
        tmp_path, "ecdsa-p256", ssl.TLSVersion.TLSv1_2, "ECDHE-ECDSA-AES128-GCM-SHA256"
    )
    transcript = read_transcript(sent, received, "1.2", suite)
    server = [m.message_type for m in transcript.messages if not m.written]
    # ServerHello, Certificate, ServerKeyExchange, ServerHelloDone in the clear, Finished not
    assert server[:4] == [2, 11, 12, 14]
    assert server[-1] == PROTECTED_RECORD
    assert [r.messages for r in transcript.records if not r.written][:4] == [
        (2,),
        (11,),
        (12,),
        (14,),
    ]


def test_a_wrong_secret_is_an_error_not_garbage(tmp_path):
    sent, received, secrets, _, suite = _handshake(
        tmp_path, "ecdsa-p256", ssl.TLSVersion.TLSv1_3, None
    )
    wrong = {label: bytes(len(value)) for label, value in secrets.items()}
    with pytest.raises(WireError, match="does not open"):
        read_transcript(sent, received, "1.3", suite, wrong)


def test_a_cut_stream_keeps_its_whole_records(tmp_path):
    sent, received, secrets, _, suite = _handshake(
        tmp_path, "ecdsa-p256", ssl.TLSVersion.TLSv1_3, None
    )
    whole = read_transcript(sent, received, "1.3", suite, secrets)
    cut = read_transcript(sent, received[: len(received) - 3], "1.3", suite, secrets)
    assert len(cut.records) == len(whole.records) - 1
