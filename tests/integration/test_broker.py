"""The embedded mosquitto: start, auth and ACLs enforced, TLS listener, failures explained."""

from __future__ import annotations

import dataclasses
import socket
import ssl
import subprocess
from pathlib import Path

import pytest

from iotsecbench.errors import EnvironmentProblem, MissingBinaryError
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from iotsecbench.lab.pki import create_certificates
from iotsecbench.security.tls import TlsProfile, mosquitto_listener_lines

pytestmark = pytest.mark.integration


def _publish(port: int, user: BrokerUser | None, topic: str, *extra: str) -> int:
    argv = [
        "mosquitto_pub",
        "-h",
        "127.0.0.1",
        "-p",
        str(port),
        "-t",
        topic,
        "-m",
        "x",
        "-q",
        "1",
        *extra,
    ]
    if user is not None:
        argv += ["-u", user.name, "-P", user.password]
    return subprocess.run(argv, capture_output=True, timeout=10).returncode


def test_broker_accepts_only_its_accounts_and_stops_cleanly(mosquitto: str, tmp_path: Path) -> None:
    emitter = BrokerUser.random("emitter", read=[], write=["iotsb/t/data"])
    with MosquittoBroker(tmp_path / "broker", [emitter]) as broker:
        assert broker.listener is not None and not broker.listener.tls
        port = broker.listener.port
        assert _publish(port, emitter, "iotsb/t/data") == 0
        assert _publish(port, None, "iotsb/t/data") != 0  # anonymous refused
        wrong = BrokerUser(emitter.name, "not-the-password")
        assert _publish(port, wrong, "iotsb/t/data") != 0
        pid = broker.pid
        text = (tmp_path / "broker" / "mosquitto.conf").read_text()
        assert "allow_anonymous false" in text and "127.0.0.1" in text
    assert not Path(f"/proc/{pid}").exists()
    log = (tmp_path / "broker" / "mosquitto.log").read_text()
    assert "running" in log and "terminating" in log


def test_tls_listener_speaks_the_requested_version(mosquitto: str, tmp_path: Path) -> None:
    certs = create_certificates(tmp_path / "pki", "rsa2048")
    assert oct((certs.server_key.stat().st_mode) & 0o777) == "0o600"
    profile = TlsProfile(version="1.2", ciphers=None, certificate="rsa2048")
    lines = mosquitto_listener_lines(profile, certs.ca_file, certs.server_cert, certs.server_key)
    user = BrokerUser.random("emitter", read=[], write=["t"])
    with MosquittoBroker(tmp_path / "broker", [user], tls_lines=lines) as broker:
        assert broker.listener is not None and broker.listener.tls
        context = ssl.create_default_context(cafile=str(certs.ca_file))
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        with (
            socket.create_connection(("127.0.0.1", broker.listener.port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            assert tls.version() == "TLSv1.2"


def test_broker_start_failure_is_one_clear_error(mosquitto: str, tmp_path: Path) -> None:
    user = BrokerUser.random("emitter", read=[], write=["t"])
    broken = MosquittoBroker(tmp_path / "broker", [user], tls_lines=["no_such_option 1"])
    try:
        with pytest.raises(EnvironmentProblem) as error:
            broken.start()
    finally:
        broken.stop()  # had it started after all, no broker may outlive the test
    assert "mosquitto did not start" in str(error.value)
    assert "no_such_option" in str(error.value)


def test_missing_binary_names_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("IOTSB_MOSQUITTO", "/nonexistent/mosquitto")
    with pytest.raises(MissingBinaryError, match="IOTSB_MOSQUITTO"):
        MosquittoBroker(tmp_path, [])
    monkeypatch.delenv("IOTSB_MOSQUITTO")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MissingBinaryError, match="apt-get install mosquitto"):
        MosquittoBroker(tmp_path, [])


def test_user_records_never_show_passwords() -> None:
    user = BrokerUser.random("receiver", read=["a"], write=[])
    assert user.password not in repr(user)
    assert user.password not in str(dataclasses.asdict(user).keys())
