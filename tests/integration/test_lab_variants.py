"""More of the matrix against real mosquitto: TLS 1.3 with an ECDSA certificate, a payload
scheme on top of TLS, QoS 0 and 2, and an external broker given by URL."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from tests.conftest import run_cli

pytestmark = pytest.mark.integration


def test_tls13_ecdsa_scheme_over_tls_and_qos_levels(mosquitto: str, tmp_path: Path) -> None:
    spec = tmp_path / "variants.toml"
    spec.write_text(
        'name = "variants"\n'
        'configurations = ["tls1.3", "tls1.2+ecdh-p256-aes128-gcm"]\n'
        "qos = [0, 2]\npayload_bytes = [100]\nduration_s = 1.0\nrepetitions = 1\n"
        '[tls]\ncertificate = "ecdsa-p256"\n'
    )
    out = tmp_path / "out"
    result = run_cli("run", str(spec), "--out", str(out), "--quiet", "--no-report")
    assert result.returncode == 0, result.stderr + result.stdout
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rows = db.execute("""
            select configuration, qos, status, tls_version, tls_cipher, tls_signature,
                   messages_sent, messages_delivered from runs order by 1, 2""").fetchall()
        assert len(rows) == 4
        for configuration, _qos, status, version, cipher, signature, sent, delivered in rows:
            assert status == "ok" and sent == delivered == 10
            if configuration == "tls1.3":
                assert version == "1.3" and cipher.startswith("TLS_")
            else:
                assert version == "1.2" and "ECDSA" in cipher
            assert signature and "ecdsa" in signature.lower()
        key_exchanges = db.execute("""
            select count(*) from handshakes h join runs r using (run_id)
            where r.configuration like 'tls1.2+%' and h.phase = 'key_exchange'""").fetchone()
        assert key_exchanges[0] == 4  # both agents of both QoS runs


def test_external_broker_by_url(mosquitto: str, tmp_path: Path) -> None:
    shared = BrokerUser.random("shared", read=["iotsb/#"], write=["iotsb/#"])
    with MosquittoBroker(tmp_path / "external", [shared]) as broker:
        assert broker.listener is not None
        url = f"mqtt://{shared.name}:{shared.password}@127.0.0.1:{broker.listener.port}"
        out = tmp_path / "out"
        result = run_cli(
            "run",
            "--configs",
            "plain,ecdh-p256-aes128-gcm",
            "--duration",
            "1",
            "--reps",
            "1",
            "--broker",
            url,
            "--out",
            str(out),
            "--quiet",
            "--no-report",
        )
        assert result.returncode == 0, result.stderr + result.stdout
        log = (tmp_path / "external" / "mosquitto.log").read_text()
    assert log.count(f"u'{shared.name}'") >= 4  # both agents of both runs used our broker
    assert not (out / "runs" / "plain_256B_10Hz_q1_r1" / "broker").exists()
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        assert (
            db.execute(
                "select count(*) from runs where status = 'ok' and broker_version = 'external'"
            ).fetchone()[0]
            == 2
        )


def test_saturating_python_agents_publish_as_fast_as_the_broker_takes(
    mosquitto: str, tmp_path: Path
) -> None:
    """`--rate max` on the Python agents over MQTT: the emitter has no schedule (it once
    published at the default 10 Hz while the run was stored as saturating)."""
    out = tmp_path / "out"
    result = run_cli(
        "run", "--configs", "tls1.2", "--rate", "max", "--duration", "1", "--reps", "1",
        "--payload", "64", "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        pacing, sent, delivered, lost = db.execute(
            "select pacing, messages_sent, messages_delivered, messages_lost from runs"
        ).fetchone()
        announced = db.execute(
            "select json_extract(detail_json, '$.messages') from events "
            "where kind = 'publish_start' and agent = 'emitter'"
        ).fetchone()
    # Ten times the 10 Hz schedule is far below what one core publishes in a second (~3,000
    # TLS messages here) and far above what a scheduled emitter would send.
    assert pacing == "saturating" and sent >= 100
    assert delivered + lost == sent
    assert int(announced[0]) == -1  # "as many as fit in duration_s", as the native agent says
