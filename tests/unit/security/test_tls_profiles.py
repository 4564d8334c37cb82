"""TLS profiles, broker config lines, and the handshake observer against real local handshakes.

Each handshake test runs an ``ssl`` server thread on 127.0.0.1 port 0 with a self-signed
certificate generated here, connects with ``client_context`` and checks what the observer
reports. Loopback only; no broker involved.
"""

from __future__ import annotations

import datetime
import re
import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from tests.conftest import missing_c_build_tool

from iotsecbench.errors import SpecError
from iotsecbench.lab.capabilities import check_tls_recorder
from iotsecbench.security.tls import (
    SERVER_NAME,
    HandshakeObserver,
    NegotiatedTls,
    TlsProfile,
    broker_openssl_config,
    client_context,
    client_groups,
    handshake_operations,
    mosquitto_listener_lines,
    parse_profile,
    recorder_problem,
    verify_negotiated,
)
from iotsecbench.security.tls.observe import _tlsrecord

TIMEOUT_S = 5


def _write_self_signed(directory: Path, stem: str, key) -> tuple[Path, Path]:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(SERVER_NAME)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / f"{stem}.crt", directory / f"{stem}.key"
    # Twice: the server sends it as leaf and as root, like the lab's chain of length 1.
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM) * 2)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    directory = tmp_path_factory.mktemp("pki")
    return {
        "rsa2048": _write_self_signed(
            directory, "rsa", rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ),
        "ecdsa-p256": _write_self_signed(
            directory, "ecdsa", ec.generate_private_key(ec.SECP256R1())
        ),
    }


def handshake(
    certificates,
    profile: TlsProfile,
    configure_server: Callable[[ssl.SSLContext], None] = lambda context: None,
    client_certificate: bool = False,
    recorder: str = "c",
) -> NegotiatedTls:
    """One real handshake over loopback; the observer's report (``recorder``: "c" uses the
    C recorder where it works, "python" Python's ``_msg_callback``)."""
    cert_path, key_path = certificates[profile.certificate]
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_path, key_path)
    server_context.set_ciphers("ALL")  # let the client's offer decide (static RSA too)
    if client_certificate:
        server_context.verify_mode = ssl.CERT_REQUIRED
        server_context.load_verify_locations(cert_path)
    configure_server(server_context)

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(TIMEOUT_S)
    server_errors: list[BaseException] = []

    def serve() -> None:
        try:
            connection, _ = listener.accept()
            connection.settimeout(TIMEOUT_S)
            with server_context.wrap_socket(connection, server_side=True) as tls:
                tls.sendall(b"!")
                tls.recv(1)
        except BaseException as error:  # reported by the test, not lost in the thread
            server_errors.append(error)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        context = client_context(
            profile,
            cert_path,
            client_cert=cert_path if client_certificate else None,
            client_key=key_path if client_certificate else None,
        )
        observer = HandshakeObserver(prefer_c=recorder == "c")
        observer.install(context)
        raw = socket.create_connection(listener.getsockname(), timeout=TIMEOUT_S)
        with context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls:
            tls.recv(1)  # after the handshake; also reads TLS 1.3 session tickets
            tls.sendall(b"?")
            negotiated = observer.negotiated(tls)
    finally:
        thread.join(TIMEOUT_S)
        listener.close()
    assert not server_errors, server_errors
    return negotiated


def test_tls13_default_negotiates_x25519(certificates):
    profile = TlsProfile(version="1.3", ciphers=None, certificate="rsa2048")
    negotiated = handshake(certificates, profile)
    assert negotiated.version == "1.3"
    assert negotiated.cipher.startswith("TLS_")
    assert negotiated.group == "x25519"
    assert negotiated.signature_algorithm == "rsa_pss_rsae_sha256"
    assert not negotiated.hello_retry and not negotiated.resumed
    received = [name for name, _ in negotiated.handshake_messages_received]
    assert received[:5] == [
        "server_hello",
        "encrypted_extensions",
        "certificate",
        "certificate_verify",
        "finished",
    ]
    assert [name for name, _ in negotiated.handshake_messages_sent] == ["client_hello", "finished"]
    assert negotiated.handshake_bytes_received > 500  # carries an RSA-2048 certificate
    verify_negotiated(profile, negotiated)
    assert handshake_operations(negotiated, "rsa2048") == [
        ("x25519-keygen", 1),
        ("x25519-derive", 1),
        ("rsa2048-public", 1),
        ("rsa2048-public", 1),
    ]
    record = negotiated.to_dict()
    assert record["group"] == "x25519" and record["handshake_message_count_sent"] == 2


def test_tls12_ecdhe_reports_group_and_requested_suite(certificates):
    profile = TlsProfile(
        version="1.2", ciphers="ECDHE-RSA-AES128-GCM-SHA256", certificate="rsa2048"
    )
    negotiated = handshake(certificates, profile)
    assert negotiated.version == "1.2"
    assert negotiated.cipher == "ECDHE-RSA-AES128-GCM-SHA256"
    assert negotiated.group == "x25519"  # OpenSSL's first preference
    assert negotiated.signature_algorithm.startswith("rsa_")
    assert "server_key_exchange" in [name for name, _ in negotiated.handshake_messages_received]
    verify_negotiated(profile, negotiated)


def test_tls12_ecdhe_p256(certificates):
    profile = TlsProfile(version="1.2", ciphers="ECDHE+AESGCM", certificate="rsa2048")
    negotiated = handshake(certificates, profile, lambda c: c.set_ecdh_curve("prime256v1"))
    assert negotiated.group == "secp256r1"
    assert negotiated.cipher.startswith("ECDHE-RSA-AES")
    verify_negotiated(profile, negotiated)
    assert handshake_operations(negotiated, "rsa2048")[:2] == [
        ("ecdh-p256-keygen", 1),
        ("ecdh-p256-derive", 1),
    ]


def test_tls13_p256_after_hello_retry(certificates):
    profile = TlsProfile(version="1.3", ciphers=None, certificate="rsa2048")
    negotiated = handshake(certificates, profile, lambda c: c.set_ecdh_curve("prime256v1"))
    assert negotiated.group == "secp256r1"
    assert negotiated.hello_retry  # the client's first key share was x25519


def test_tls12_static_rsa_has_no_group(certificates):
    profile = TlsProfile(version="1.2", ciphers="AES128-GCM-SHA256", certificate="rsa2048")
    negotiated = handshake(certificates, profile)
    assert negotiated.cipher == "AES128-GCM-SHA256"
    assert negotiated.group is None
    assert negotiated.signature_algorithm is None
    verify_negotiated(profile, negotiated)
    # Premaster encryption plus the certificate signature.
    assert handshake_operations(negotiated, "rsa2048") == [
        ("rsa2048-public", 1),
        ("rsa2048-public", 1),
    ]


def test_tls13_ecdsa_certificate(certificates):
    profile = TlsProfile(version="1.3", ciphers=None, certificate="ecdsa-p256")
    negotiated = handshake(certificates, profile)
    assert negotiated.signature_algorithm == "ecdsa_secp256r1_sha256"
    verify_negotiated(profile, negotiated)
    assert handshake_operations(negotiated, "ecdsa-p256")[2:] == [
        ("ecdsa-p256-verify", 1),
        ("ecdsa-p256-verify", 1),
    ]
    with pytest.raises(ValueError, match="rsa2048"):
        verify_negotiated(TlsProfile("1.3", None, "rsa2048"), negotiated)


def test_mutual_tls_counts_the_client_signature(certificates):
    profile = TlsProfile(version="1.3", ciphers=None, certificate="rsa2048", mutual=True)
    negotiated = handshake(certificates, profile, client_certificate=True)
    assert negotiated.client_certificate_sent
    assert ("rsa2048-private", 1) in handshake_operations(negotiated, "rsa2048")


def test_tls13_suite_outside_the_request_is_caught(certificates):
    # Python cannot restrict TLS 1.3 suites on the client; the broker does (ciphers_tls1.3).
    # If it did not, verify_negotiated must notice.
    negotiated = handshake(certificates, TlsProfile("1.3", None, "rsa2048"))
    suites = ["TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_256_GCM_SHA384"]
    other = next(suite for suite in suites if suite != negotiated.cipher)
    with pytest.raises(ValueError, match="not among the requested"):
        verify_negotiated(TlsProfile("1.3", other, "rsa2048"), negotiated)
    verify_negotiated(TlsProfile("1.3", negotiated.cipher, "rsa2048"), negotiated)


def _negotiated(**changes) -> NegotiatedTls:
    base = dict(
        version="1.2",
        cipher="ECDHE-RSA-AES128-GCM-SHA256",
        cipher_bits=128,
        group="secp256r1",
        signature_algorithm="rsa_pss_rsae_sha256",
    )
    base.update(changes)
    return NegotiatedTls(**base)


def test_verify_negotiated_names_the_mismatch():
    profile = TlsProfile("1.2", "ECDHE-RSA-AES128-GCM-SHA256", "rsa2048")
    verify_negotiated(profile, _negotiated())
    with pytest.raises(ValueError, match=r"negotiated TLS 1\.3 .* asks for TLS 1\.2"):
        verify_negotiated(profile, _negotiated(version="1.3", cipher="TLS_AES_128_GCM_SHA256"))
    with pytest.raises(ValueError, match="ECDHE-RSA-AES256-GCM-SHA384 is not among"):
        verify_negotiated(profile, _negotiated(cipher="ECDHE-RSA-AES256-GCM-SHA384"))
    keyword_profile = TlsProfile("1.2", "ECDHE+AESGCM", "rsa2048")
    verify_negotiated(keyword_profile, _negotiated(cipher="ECDHE-RSA-AES256-GCM-SHA384"))


def test_handshake_operations_for_resumption_and_unknown_groups():
    resumed = _negotiated(resumed=True, group=None, signature_algorithm=None)
    assert handshake_operations(resumed, "rsa2048") == []
    hybrid = _negotiated(version="1.3", group="X25519MLKEM768")
    assert ("mlkem768-decaps", 1) in handshake_operations(hybrid, "rsa3072")
    assert ("rsa3072-public", 1) in handshake_operations(hybrid, "rsa3072")
    with pytest.raises(ValueError):
        handshake_operations(_negotiated(group=None), "ecdsa-p256")


@pytest.mark.parametrize(
    ("version", "ciphers", "match"),
    [
        ("1.3", "ECDHE-RSA-AES128-GCM-SHA256", "TLS 1.3 profile with TLS 1.2"),
        ("1.2", "TLS_AES_128_GCM_SHA256", "TLS 1.2 profile with TLS 1.3"),
        ("1.4", None, "1.2 or 1.3"),
        ("1.2", "", "non-empty"),
    ],
)
def test_profile_conflicts_are_spec_errors(version, ciphers, match):
    with pytest.raises(SpecError, match=match):
        TlsProfile(version=version, ciphers=ciphers, certificate="rsa2048")
    with pytest.raises(SpecError):
        TlsProfile(version="1.2", ciphers=None, certificate="dsa1024")


def test_tls12_mutual_ecdsa_needs_the_certificates_curve_among_the_groups():
    """The broker limits its groups to the profile's, and OpenSSL's TLS 1.2 server then
    refuses a P-256 client certificate (an illegal_parameter alert on every stack): refused
    before anything starts, with the fix."""
    for group in ("x25519", "P-384", "x448"):
        with pytest.raises(SpecError, match="needs the P-256 group"):
            TlsProfile("1.2", None, "ecdsa-p256", mutual=True, group=group)
    for allowed in (
        TlsProfile("1.2", None, "ecdsa-p256", mutual=True, group="P-256"),
        TlsProfile("1.2", None, "ecdsa-p256", mutual=True),
        TlsProfile("1.2", None, "ecdsa-p256", group="x25519"),  # the server's own: accepted
        TlsProfile("1.2", None, "rsa2048", mutual=True, group="x25519"),
        TlsProfile("1.3", None, "ecdsa-p256", mutual=True, group="x25519"),
    ):
        assert allowed.mutual or allowed.group


def test_client_context_pins_version_and_verifies(certificates):
    cert_path, _ = certificates["rsa2048"]
    context = client_context(TlsProfile("1.2", "ECDHE-RSA-AES128-GCM-SHA256", "rsa2048"), cert_path)
    assert context.minimum_version == context.maximum_version == ssl.TLSVersion.TLSv1_2
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    tls12 = [c["name"] for c in context.get_ciphers() if c["protocol"] != "TLSv1.3"]
    assert tls12 == ["ECDHE-RSA-AES128-GCM-SHA256"]
    with pytest.raises(SpecError):
        client_context(TlsProfile("1.2", "NO-SUCH-CIPHER", "rsa2048"), cert_path)
    with pytest.raises(ValueError):
        client_context(TlsProfile("1.3", None, "rsa2048", mutual=True), cert_path)


def test_mosquitto_listener_lines():
    tls12 = TlsProfile("1.2", "ECDHE-RSA-AES128-GCM-SHA256", "rsa2048")
    assert mosquitto_listener_lines(tls12, "/p/ca.crt", "/p/server.crt", "/p/server.key") == [
        "cafile /p/ca.crt",
        "certfile /p/server.crt",
        "keyfile /p/server.key",
        "tls_version tlsv1.2",
        "ciphers ECDHE-RSA-AES128-GCM-SHA256:@SECLEVEL=2",
        "require_certificate false",
    ]
    tls13 = TlsProfile("1.3", "TLS_AES_128_GCM_SHA256", "ecdsa-p256", mutual=True)
    lines = mosquitto_listener_lines(tls13, Path("/ca"), Path("/c"), Path("/k"))
    assert "tls_version tlsv1.3" in lines
    assert "ciphers_tls1.3 TLS_AES_128_GCM_SHA256" in lines
    # TLS 1.2 suites are off; the line only pins the security level.
    assert "ciphers DEFAULT:@SECLEVEL=2" in lines
    assert "require_certificate true" in lines
    with pytest.raises(ValueError):
        mosquitto_listener_lines(tls12, "/ca\nlistener 1883", "/c", "/k")


@pytest.mark.parametrize(
    ("options", "fix"),
    [
        ({"version": "1.2", "ciphers": "ECDHE-ECDSA-AES128-GCM-SHA256"}, "= ecdsa-p256"),
        (
            {"version": "1.2", "ciphers": "ECDHE-RSA-AES128-GCM-SHA256", "certificate": "ed25519"},
            "certificate = rsa2048",
        ),
        ({"version": "1.2", "ciphers": "AES256-GCM-SHA384", "group": "x25519"}, "drop group"),
        (
            {"version": "1.2", "ciphers": "ECDHE-RSA-AES128-GCM-SHA256", "group": "modp2048"},
            "needs a DHE suite",
        ),
        ({"version": "1.2", "group": "ffdhe2048"}, "use tls1.3 for ffdhe2048"),
        ({"version": "1.2", "group": "modp2048", "certificate": "rsa3072"}, "= rsa2048"),
        ({"version": "1.3", "group": "modp2048"}, "ffdhe2048"),
        ({"version": "1.3", "security_level": 3}, "security_level = 2"),
        (
            {"version": "1.2", "ciphers": "AES256-GCM-SHA384", "certificate": "rsa3072",
             "security_level": 3},
            "security_level = 2",
        ),
        ({"version": "1.3", "ciphers": "TLS_AES_512_GCM"}, "known: TLS_AES_128_GCM_SHA256"),
        ({"version": "1.3", "group": "brainpool"}, "unknown TLS group"),
        ({"version": "1.3", "chain_length": 4}, "chain_length"),
    ],
)  # fmt: skip
def test_impossible_combinations_name_the_fix(options, fix):
    options = {"ciphers": None, "certificate": "rsa2048", **options}
    with pytest.raises(SpecError, match=re.escape(fix)):
        TlsProfile(**options)


def test_profile_names_round_trip():
    profile = parse_profile("tls1.3/TLS_AES_128_GCM_SHA256/P-256/ed25519/chain2/mutual/resume")
    assert profile.group == "secp256r1" and profile.certificate == "ed25519"
    assert profile.chain_length == 2 and profile.mutual and profile.resumption
    assert parse_profile(profile.name) == profile
    assert parse_profile("tls1.2/ECDHE-ECDSA-AES128-GCM-SHA256/ecdsa-p256").version == "1.2"
    with pytest.raises(SpecError, match="cannot read 'bogus'"):
        parse_profile("tls1.3/bogus")
    with pytest.raises(SpecError, match="must start with"):
        parse_profile("x25519/tls1.3")


def test_client_offers_only_the_requested_group_and_suite(certificates):
    # The ctypes route: the TLS 1.3 key share and suite are the profile's, no HelloRetryRequest.
    profile = TlsProfile("1.3", "TLS_CHACHA20_POLY1305_SHA256", "rsa2048", group="P-384")
    negotiated = handshake(certificates, profile)
    assert negotiated.group == "secp384r1" and not negotiated.hello_retry
    assert negotiated.cipher == "TLS_CHACHA20_POLY1305_SHA256"
    assert negotiated.round_trips == 1
    verify_negotiated(profile, negotiated)
    context = client_context(profile, certificates["rsa2048"][0])
    assert context.security_level == 2
    low = client_context(
        TlsProfile("1.3", None, "rsa2048", security_level=1), certificates["rsa2048"][0]
    )
    assert low.security_level == 1


def test_broker_gets_the_group_through_openssl_conf():
    assert "Groups = P-384" in broker_openssl_config(
        TlsProfile("1.2", None, "rsa2048", group="P-384")
    )
    assert broker_openssl_config(TlsProfile("1.3", None, "rsa2048")) is None
    assert client_groups(TlsProfile("1.2", None, "ecdsa-p256", group="x25519")) == "X25519:P-256"
    assert client_groups(TlsProfile("1.3", None, "ecdsa-p256", group="x25519")) == "X25519"


# --- the C handshake recorder (security/_tlsrecord.c) -------------------------------------


def test_recorder_is_used_wherever_it_can_be_built():
    # Where the compiler and headers exist (CI: scripts/setup.sh installs them) the recorder
    # must work, or every TLS CPU figure silently includes Python's hook again.
    missing = missing_c_build_tool("ssl.h")
    if missing:
        pytest.skip(f"{missing} here: Python's _msg_callback is used")
    assert recorder_problem() is None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    observer = HandshakeObserver()
    observer.install(context)
    assert observer.recorder == "c"
    assert check_tls_recorder().ok


needs_recorder = pytest.mark.skipif(recorder_problem() is not None, reason=f"{recorder_problem()}")


@needs_recorder
@pytest.mark.parametrize(
    "profile",
    [
        TlsProfile(version="1.3", ciphers=None, certificate="rsa2048"),
        TlsProfile(version="1.3", ciphers=None, certificate="rsa2048", mutual=True),
        TlsProfile(version="1.2", ciphers="ECDHE-RSA-AES128-GCM-SHA256", certificate="rsa2048"),
        TlsProfile(version="1.2", ciphers="AES128-GCM-SHA256", certificate="rsa2048"),
    ],
    ids=["tls13", "tls13-mutual", "tls12-ecdhe", "tls12-static-rsa"],
)
def test_c_recorder_reports_what_pythons_hook_reports(certificates, profile):
    client_certificate = profile.mutual
    # RSA signatures have one length, so two handshakes of one profile must be reported
    # identically by both recorders, message by message.
    from_c = handshake(certificates, profile, client_certificate=client_certificate, recorder="c")
    from_python = handshake(
        certificates, profile, client_certificate=client_certificate, recorder="python"
    )
    c_report, c_tickets = _ticket_sizes_apart(from_c.to_dict())
    python_report, python_tickets = _ticket_sizes_apart(from_python.to_dict())
    assert c_report == python_report
    assert len(c_tickets) == len(python_tickets)
    assert all(abs(a - b) <= TICKET_BLOCK for a, b in zip(c_tickets, python_tickets, strict=True))
    assert from_c.handshake_messages_received  # not trivially equal


# A TLS 1.3 ticket is OpenSSL's session, ASN.1-encoded (its random ticket_age_add an INTEGER
# of 1-5 bytes) and encrypted with AES-CBC: two handshakes' tickets can differ by one block.
TICKET_BLOCK = 16


def _ticket_sizes_apart(report: dict) -> tuple[dict, list[int]]:
    """The report with its session tickets' sizes taken out (and out of the byte total),
    and those sizes in order."""
    received = report["handshake_messages_received"]
    tickets = [size for name, size in received if name == "newsession_ticket"]
    rest = {
        **report,
        "handshake_messages_received": [
            [name, None if name == "newsession_ticket" else size] for name, size in received
        ],
        "handshake_bytes_received": report["handshake_bytes_received"] - sum(tickets),
    }
    return rest, tickets


@needs_recorder
def test_recorder_lookup_never_dereferences_an_unknown_address():
    assert _tlsrecord is not None
    assert _tlsrecord.messages(0) is None
    assert _tlsrecord.messages(id(object())) is None  # some live, unrelated memory
