"""The receiver's defences tried live: a third broker client (agents/attacker.py, through the
fault hook) publishes tampered, replayed, reordered, truncated and wrong-key copies of real
messages during a run. The receiver's stored counters must match what it sent, exactly, and
nothing forged may count as delivered (issue: hardening; docs/reliability.md)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.integration

AEAD = "ecdh-p256-aes128-gcm"
CBC = "ecdh-p256-aes128-cbc"  # no MAC: the stability study's scheme, malleable by design


def forged_by_kind(db: duckdb.DuckDBPyConnection, run_id: str) -> Counter[str]:
    rows = db.execute(
        "select detail_json from events where run_id = ? and agent = 'attacker' "
        "and kind = 'forged'",
        [run_id],
    ).fetchall()
    return Counter(json.loads(detail)["forgery"] for (detail,) in rows)


def outcome(db: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, int]:
    names = (
        "messages_sent, messages_delivered, auth_failures, malformed, replays_rejected, duplicates"
    )
    row = db.execute(f"select {names} from runs where run_id = ?", [run_id]).fetchone()
    statuses = dict(
        db.execute(
            "select status, count(*) from messages where run_id = ? group by status", [run_id]
        ).fetchall()
    )
    return {**dict(zip(names.split(", "), row, strict=True)), **statuses}


@pytest.fixture(scope="module")
def attacked(mosquitto: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("attacked")
    result = run_cli(
        *("run", "--configs", f"{AEAD},{CBC}", "--duration", "4", "--reps", "1"),
        *("--out", str(out), "--quiet"),
        env={"IOTSB_TEST_FAULT": "attacker:forge@ecdh-p256"},
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    return out


def test_an_aead_rejects_every_forgery_and_counts_each_exactly(attacked: Path) -> None:
    with duckdb.connect(str(attacked / "results.duckdb"), read_only=True) as db:
        run_id = f"{AEAD}_256B_10Hz_q1_r1"
        sent = forged_by_kind(db, run_id)
        got = outcome(db, run_id)
    assert sum(sent.values()) >= 10 and set(sent) == {
        "tampered",
        "replayed",
        "reordered",
        "truncated",
        "wrong-key",
    }, sent
    assert got["auth_failures"] == sent["tampered"] + sent["wrong-key"], (got, sent)
    assert got["replays_rejected"] == sent["replayed"] + sent["reordered"], (got, sent)
    assert got["malformed"] == sent["truncated"], (got, sent)
    assert got["duplicates"] == 0
    assert got["messages_delivered"] == got["messages_sent"] == got["delivered"]
    assert "forged" not in got


def test_cbc_without_a_mac_accepts_forgeries_and_the_report_says_so(attacked: Path) -> None:
    with duckdb.connect(str(attacked / "results.duckdb"), read_only=True) as db:
        run_id = f"{CBC}_256B_10Hz_q1_r1"
        sent = forged_by_kind(db, run_id)
        got = outcome(db, run_id)
    forged = got.get("forged", 0)
    # Every forgery is counted once: rejected as malformed (bad padding, too short), caught
    # only by the application's duplicate check (replays: CBC has no counter), or accepted.
    assert got["malformed"] + got["duplicates"] + forged == sum(sent.values()), (got, sent)
    assert got["duplicates"] == sent["replayed"] + sent["reordered"], (got, sent)
    # A flipped IV bit flips the same plaintext bit: every tampered copy is a new message.
    assert forged >= sent["tampered"] >= 1, (got, sent)
    assert got["auth_failures"] == got["replays_rejected"] == 0  # nothing to check them with
    # Forgeries are not deliveries: the delivered count is the emitter's messages only.
    assert got["messages_delivered"] == got["messages_sent"] == got["delivered"]
    report = (attacked / "report" / "report.html").read_text(encoding="utf-8")
    assert f"accepted {forged} forged message(s)" in report
