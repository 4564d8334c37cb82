"""The Lua dissector (docs/wireshark/iotsecbench.lua) against the Python schemes: messages
sealed by iotsecbench's own sealers, in hand-made MQTT packets, opened by Debian's tshark
running the dissector. Two sessions per cipher in the keys (a decoy first): the tag must pick
the right one, and a flipped bit must not open."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from iotsecbench.agents import wire
from iotsecbench.security.key_establishment import SessionKeys, export_key_log_lines
from iotsecbench.security.schemes import get_scheme
from tests.capture_tools import DISSECTOR, mqtt_publish, tshark, tshark_fields, write_pcap

pytestmark = pytest.mark.integration

DECRYPTED = [  # every cipher the dissector opens (its header comment lists them)
    "aes128-gcm",
    "aes256-gcm",
    "aes128-ccm8",
    "aes256-ccm8",
    "aes128-ctr-hmac",
    "aes256-ctr-hmac",
    "tinyaes128-ctr-hmac",
    "aes128-ctr-hmac-tablefree",
    "aes256-ctr-hmac-tablefree",
    "aes128-cbc-hmac",
    "aes256-cbc-hmac",
    "chacha20-poly1305",
]
SHOWN_ONLY = ["xchacha20-poly1305", "ascon-aead128", "speck128-128-ctr-hmac"]
TOPIC = "iotsb/0123456789ab/data"


def _capture(
    tmp_path: Path,
    ciphers: list[str],
    *,
    decoys: bool = True,
    flip: bool = False,
    comment: bool = True,
):
    """A pcapng of two sealed messages per cipher, the sessions' keys in its first packet's
    comment (as `run --capture` writes them) and in ``keys.log``; the expected plaintexts in
    packet order."""
    segments, lines, expected = [], [], []
    filler = wire.make_filler(100, 7)
    for cipher in ciphers:
        scheme = get_scheme(f"x25519-{cipher}" if cipher != "aes128-cbc" else "ecdh-p256-" + cipher)
        for _ in range(2 if decoys else 1):  # the last one is the session that sealed
            session_id = os.urandom(8)
            keys = SessionKeys(
                scheme.random_keys(session_id, "e2r"), scheme.random_keys(session_id, "r2e")
            )
            lines += export_key_log_lines(keys, scheme.name)
        sealer = scheme.sealer(keys.emitter_to_receiver)
        for seq in range(2):
            plaintext = wire.encode(seq, 1_000_000 + seq, filler)
            sealed = bytearray(sealer.seal(plaintext))
            if flip:
                sealed[-1] ^= 0x01
            segments.append(mqtt_publish(TOPIC, bytes(sealed)))
            expected.append((scheme.scheme_id, seq, plaintext.hex()))
    raw, capture = tmp_path / "raw.pcap", tmp_path / "capture.pcapng"
    write_pcap(raw, segments)
    (tmp_path / "keys.log").write_text("\n".join(lines) + "\n")
    keys = ["-a", "1:" + "\n".join(lines)] if comment else []
    subprocess.run(["editcap", "-F", "pcapng", *keys, str(raw), str(capture)], check=True)
    return capture, expected


def _dissected(capture: Path, *options: str) -> list[list[str]]:
    return tshark_fields(
        capture,
        ["iotsb.scheme_id", "iotsb.seq", "iotsb.status", "iotsb.plaintext", "iotsb.message.seq"],
        "-X",
        f"lua_script:{DISSECTOR}",
        *options,
        display_filter="iotsb",
    )


def test_the_dissector_opens_what_the_schemes_sealed(tmp_path: Path) -> None:
    tshark()
    capture, expected = _capture(tmp_path, DECRYPTED)
    rows = _dissected(capture)
    assert len(rows) == len(expected)
    for (scheme_id, seq, plaintext), row in zip(expected, rows, strict=True):
        assert row[:3] == [str(scheme_id), str(seq), "yes: tag verified"]
        assert row[3] == plaintext and row[4] == str(seq)


def test_unauthenticated_cbc_opens_by_its_padding(tmp_path: Path) -> None:
    tshark()
    # One session only: without a tag, a decoy key passes the padding check once in ~256.
    capture, expected = _capture(tmp_path, ["aes128-cbc"], decoys=False)
    rows = _dissected(capture)
    assert [row[3] for row in rows] == [plaintext for _, _, plaintext in expected]
    assert all("not authenticated" in row[2] for row in rows)


def test_a_flipped_bit_opens_nothing_and_other_ciphers_are_shown(tmp_path: Path) -> None:
    tshark()
    capture, expected = _capture(tmp_path, ["aes128-gcm", "chacha20-poly1305"], flip=True)
    rows = _dissected(capture)
    assert [row[2] for row in rows] == ["no: no logged session's key opens it"] * len(expected)
    assert all(row[3] == "" for row in rows)
    shown, expected = _capture(tmp_path, SHOWN_ONLY)
    rows = _dissected(shown)
    assert [(row[0], row[1]) for row in rows] == [(str(i), str(s)) for i, s, _ in expected]
    assert all(row[2].startswith("no: this dissector does not decrypt") for row in rows)


def test_keys_from_a_key_log_file_preference(tmp_path: Path) -> None:
    tshark()
    capture, expected = _capture(tmp_path, ["aes128-gcm"], comment=False)
    without = _dissected(capture)
    assert {row[2] for row in without} == {
        "no: no session keys (key log preference or the capture's comment)"
    }
    rows = _dissected(capture, "-o", f"iotsb.keylog:{tmp_path / 'keys.log'}")
    assert [row[3] for row in rows] == [plaintext for _, _, plaintext in expected]
