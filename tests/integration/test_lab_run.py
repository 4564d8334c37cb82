"""Issue 2's acceptance check with a real mosquitto, real TLS and real agent processes:
`iotsecbench run --duration D --reps 2 --out DIR` stores complete runs per configuration
(the suite's one real default run, tests/conftest.py ``default_run``, which the report's
browser test reads too)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.conftest import DefaultRun, query

pytestmark = pytest.mark.integration

CONFIGURATIONS = ("plain", "tls1.2", "ecdh-p256-aes128-cbc", "ecdh-p256-aes128-gcm")
DURATION_S = 10.0  # default_run's
RATE_HZ = 10.0


@pytest.fixture
def results(default_run: DefaultRun) -> Path:
    assert "Handshake and latency" in default_run.result.stdout
    return default_run.out


def test_two_complete_runs_per_configuration(results: Path) -> None:
    rows = query(results, "select configuration, status, count(*) from runs group by 1, 2")
    assert sorted(rows) == sorted((c, "ok", 2) for c in CONFIGURATIONS)


def test_every_message_sent_is_received_with_sane_latency(results: Path) -> None:
    expected = round(DURATION_S * RATE_HZ)
    for run_id, sent, delivered, lost in query(
        results, "select run_id, messages_sent, messages_delivered, messages_lost from runs"
    ):
        assert (sent, delivered, lost) == (expected, expected, 0), run_id
    rows = query(
        results,
        """
        select count(*), min(t_delivered_ns - t_created_ns), max(t_delivered_ns - t_created_ns),
               min(t_arrived_ns - t_sealed_ns), min(t_sealed_ns - t_created_ns)
        from messages where status = 'delivered'""",
    )
    count, lowest, highest, transit, seal = rows[0]
    assert count == expected * 2 * len(CONFIGURATIONS)
    assert lowest > 0 and transit > 0 and seal >= 0  # one monotonic clock, ordered events
    assert highest < 1e9  # loopback: well under a second


def test_samples_at_ten_hertz_for_both_agents(results: Path) -> None:
    for run_id, agent, count, span_ns, with_current in query(
        results,
        """
            select run_id, agent, count(*), max(t_ns) - min(t_ns), count(current_ma)
            from samples group by 1, 2""",
    ):
        rate = (count - 1) / (span_ns / 1e9)
        assert 9.0 <= rate <= 11.0, (run_id, agent, rate)
        # Every agent's sample carries its modelled current; the broker (runner/broker_watch,
        # /proc at 10 Hz) is no device and has none.
        assert with_current == (0 if agent == "broker" else count)
    # Cumulative counters never go backwards.
    rows = query(
        results,
        """
        select count(*) from (
          select cpu_ns - lag(cpu_ns) over w d1,
                 tcp_bytes_sent - lag(tcp_bytes_sent) over w d2
          from samples window w as (partition by run_id, agent order by t_ns))
        where d1 < 0 or d2 < 0""",
    )
    assert rows[0][0] == 0


def test_handshake_phases_per_configuration(results: Path) -> None:
    phases = {}
    for configuration, phase in query(
        results,
        """
            select distinct r.configuration, h.phase from handshakes h join runs r using (run_id)
            where h.agent = 'emitter'""",
    ):
        phases.setdefault(configuration, set()).add(phase)
    assert phases["plain"] == {"tcp_connect", "mqtt_connect"}
    assert phases["tls1.2"] == {"tcp_connect", "tls_handshake", "mqtt_connect"}
    for scheme in ("ecdh-p256-aes128-cbc", "ecdh-p256-aes128-gcm"):
        assert phases[scheme] == {"tcp_connect", "mqtt_connect", "key_exchange"}
    for wall, cpu in query(results, "select wall_ns, cpu_ns from handshakes"):
        assert wall > 0 and cpu >= 0


def test_tls_parameters_come_from_the_live_connection(results: Path) -> None:
    rows = query(
        results,
        "select distinct tls_version, tls_cipher, tls_group from runs "
        "where configuration = 'tls1.2'",
    )
    assert len(rows) == 1
    version, cipher, group = rows[0]
    assert version == "1.2"
    assert cipher and "RSA" in cipher  # RSA-2048 server certificate, as in the study
    assert group  # ECDHE was negotiated with OpenSSL 3 defaults: the group is recorded
    assert (
        query(
            results,
            "select count(*) from runs where configuration = 'plain' and tls_version is not null",
        )[0][0]
        == 0
    )


def test_security_overheads_show_in_the_bytes_on_the_wire(results: Path) -> None:
    per_message = {}
    for configuration, wire in query(
        results,
        """
            select r.configuration, avg(m.wire_bytes) from messages m join runs r using (run_id)
            group by 1""",
    ):
        per_message[configuration] = wire
    assert per_message["plain"] == 256
    assert per_message["ecdh-p256-aes128-gcm"] == 256 + 10 + 16  # header + tag
    assert per_message["ecdh-p256-aes128-cbc"] > 256 + 16  # version/id + IV + padding
    # TCP bytes per published message (from TCP_INFO) grow with TLS record overhead.
    tcp = {}
    for configuration, sent in query(
        results,
        """
            select r.configuration, max(s.tcp_bytes_sent) from samples s join runs r
            using (run_id) where s.agent = 'emitter' group by r.run_id, 1""",
    ):
        tcp.setdefault(configuration, []).append(sent)
    assert min(tcp["tls1.2"]) > max(tcp["plain"])


def test_run_directories_keep_raw_agent_files(results: Path) -> None:
    runs = sorted((results / "runs").iterdir())
    assert len(runs) == 2 * len(CONFIGURATIONS)
    for run_dir in runs:
        assert (run_dir / "record.json").exists()
        assert (run_dir / "emitter.jsonl").exists() and (run_dir / "receiver.jsonl").exists()
        assert (run_dir / "broker" / "mosquitto.log").exists()
        assert oct((run_dir / "emitter.config.json").stat().st_mode & 0o777) == "0o600"
    experiment = json.loads((results / "spec.json").read_text())
    assert experiment["repetitions"] == 2


def test_no_secret_reaches_the_results(results: Path) -> None:
    """Every private key (PEM body and DER bytes) and every broker password is searched for
    in every file of the results directory but the two places meant to hold them: the PKI
    directory and the runs' 0600 agent configs (which hold their run's password)."""
    passwords = set()
    for run_dir in (results / "runs").iterdir():
        for role in ("emitter", "receiver"):
            config = json.loads((run_dir / f"{role}.config.json").read_text())
            passwords.add(config["password"].encode())
    keys = list((results / "pki").rglob("*.key"))
    assert keys and passwords
    needles = set(passwords)
    for key_file in keys:
        pem = key_file.read_text()
        body = "".join(line for line in pem.splitlines() if not line.startswith("-----"))
        needles.add(body.encode())
        needles.add(base64.b64decode(body))  # the DER bytes
        needles.update(line.encode() for line in pem.splitlines()[1:-1] if len(line) >= 40)
    searched = 0
    for path in results.rglob("*"):
        if not path.is_file() or path.name.endswith(".config.json"):
            continue
        if results / "pki" in path.parents:
            continue
        content = path.read_bytes()
        searched += 1
        leaked = [needle[:12] for needle in needles if needle in content]
        assert not leaked, f"{path.relative_to(results)} holds a secret starting {leaked[0]!r}"
    # The database, every record, agent record, broker log and the report were searched.
    assert searched > 10
    assert (results / "results.duckdb").exists() and (results / "report" / "report.html").exists()
    assert not list((results / "runs").rglob("psk.key"))  # removed after each run
