"""The native agent's MQTT 3.1.1 codec and payload filler (src/iotsecbench/agents/native/),
driven through tests/unit/agents/codec_check.c built with AddressSanitizer and UBSan:

- the filler is Python's ``random.Random(seed).randbytes(n)`` byte for byte (agents/wire.py),
  so a native emitter carries exactly what a Python emitter carries;
- the encoded CONNECT, SUBSCRIBE, PUBLISH, PINGREQ and DISCONNECT are accepted by a real
  mosquitto, and what it sends back (CONNACK, SUBACK, PUBACK, the PUBLISH itself, PINGRESP)
  is decoded to what was sent;
- any bytes at all are framed and decoded without reading past them: "need-more",
  "malformed <why>" or "ok", never a crash.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import REPO

# Builds codec_check with gcc and runs it as a process (tests/lanes.py).
pytestmark = pytest.mark.integration

NATIVE = REPO / "src" / "iotsecbench" / "agents" / "native"


class Codec:
    """One running codec_check process: a command in, an answer out."""

    def __init__(self, binary: Path) -> None:
        self.process = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def __call__(self, *words: object) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(" ".join(map(str, words)) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, f"codec_check died (sanitizer report above?), exit {self.process.poll()}"
        return answer.strip()

    def bytes_of(self, *words: object) -> bytes:
        return bytes.fromhex(self(*words))


@pytest.fixture(scope="module")
def codec(tmp_path_factory: pytest.TempPathFactory):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc not installed (scripts/setup.sh installs it)")
    binary = tmp_path_factory.mktemp("native") / "codec_check"
    subprocess.run(
        [gcc, "-std=c11", "-g", "-O1", "-Wall", "-Wextra", "-Werror",
         "-fsanitize=address,undefined", "-fno-sanitize-recover=all", f"-I{NATIVE}",
         "-o", str(binary), str(Path(__file__).with_name("codec_check.c")),
         str(NATIVE / "mqtt.c"), str(NATIVE / "filler.c")],
        check=True,
    )  # fmt: skip
    running = Codec(binary)
    yield running
    running.process.stdin.close()  # type: ignore[union-attr]
    assert running.process.wait(10) == 0


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), size=st.integers(0, 700))
def test_the_filler_is_pythons_randbytes(codec: Codec, seed: int, size: int) -> None:
    assert codec.bytes_of("filler", seed, size) == random.Random(seed).randbytes(size)


def test_the_filler_of_the_wire_format(codec: Codec) -> None:
    from iotsecbench.agents import wire

    for payload_bytes, seed in ((16, 0), (256, 0), (4096, 7), (1, 3)):
        filler = wire.make_filler(payload_bytes, seed)
        assert codec.bytes_of("filler", seed, len(filler)) == filler


class Packets:
    """The packets a socket brings, framed and decoded by the codec (two can share a read)."""

    def __init__(self, sock: socket.socket, codec: Codec) -> None:
        self.sock, self.codec, self.pending = sock, codec, bytearray()

    def next(self) -> str:
        while True:
            answer = self.codec("parse", self.pending.hex())
            if answer != "need-more":
                assert answer.startswith("ok "), answer
                del self.pending[: int(answer.split(" ")[2])]
                return answer
            chunk = self.sock.recv(4096)
            assert chunk, "the broker closed the connection"
            self.pending += chunk


@pytest.mark.integration
def test_a_real_mosquitto_takes_every_packet_and_is_understood(
    codec: Codec, mosquitto: str, tmp_path: Path
) -> None:
    from iotsecbench.lab.broker import BrokerUser, MosquittoBroker

    device = BrokerUser.random("device", read=["iotsb/t/#"], write=["iotsb/t/#"])
    with MosquittoBroker(tmp_path / "broker", [device]) as broker:
        assert broker.listener is not None
        address = ("127.0.0.1", broker.listener.port)
        with socket.create_connection(address, timeout=5) as sock:
            packets = Packets(sock, codec)
            sock.sendall(codec.bytes_of("connect", "native-1", device.name, device.password, 30))
            assert packets.next() == "ok connack 4 0 0"  # accepted, no session present
            sock.sendall(codec.bytes_of("subscribe", 9, "iotsb/t/data", 1))
            assert packets.next() == "ok suback 5 9 1"
            payload = random.Random(1).randbytes(300)
            sock.sendall(codec.bytes_of("publish", "iotsb/t/data", payload.hex(), 1, 4242, 0))
            answers = [packets.next(), packets.next()]  # our PUBACK and the message, any order
            assert "ok puback 4 4242" in answers
            (delivered,) = [a for a in answers if a.startswith("ok publish")]
            _, _, size, qos, dup, retain, packet_id, topic, body = delivered.split(" ")
            assert (qos, dup, retain, topic) == ("1", "0", "0", "iotsb/t/data")
            assert bytes.fromhex(body) == payload and int(size) == 1 + 2 + (
                2 + 12 + 2 + 300
            )  # 2 length bytes
            sock.sendall(codec.bytes_of("puback", packet_id))
            sock.sendall(codec.bytes_of("pingreq"))
            assert packets.next() == "ok pingresp 2"
            sock.sendall(codec.bytes_of("disconnect"))
            assert sock.recv(1) == b""  # the broker closes after DISCONNECT
        with socket.create_connection(address, timeout=5) as sock:
            sock.sendall(codec.bytes_of("connect", "native-2", device.name, "wrong", 30))
            assert Packets(sock, codec).next() == "ok connack 4 0 5"  # not authorised


MALFORMED = {
    "30ffffffff7f": "remaining length longer than four bytes",
    "0000": "reserved packet type",
    "f000": "reserved packet type",
    "36050001610001": "PUBLISH with QoS 3",
    "3003ffff61": "PUBLISH shorter than its topic and packet id",
    "32050001610000": "PUBLISH with packet id 0",
    "3001aa": "PUBLISH without a topic length",
    "2003000000": "CONNACK is not 2 bytes long",
    "20020200": "CONNACK reserved flags set",
    "9003000103": "SUBACK return code not 0, 1, 2 or 0x80",
    "90020001": "SUBACK without a return code",
    "400100": "PUBACK is not 2 bytes long",
    "d00100": "not a PINGRESP",
}


@pytest.mark.parametrize("packet", list(MALFORMED))
def test_malformed_packets_are_named_not_crashed_on(codec: Codec, packet: str) -> None:
    assert codec("parse", packet) == f"malformed {MALFORMED[packet]}"


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=64))
def test_any_bytes_are_framed_without_reading_past_them(codec: Codec, data: bytes) -> None:
    answer = codec("parse", data.hex())
    assert answer == "need-more" or answer.startswith(("malformed ", "ok "))
    if answer.startswith("ok "):
        assert int(answer.split(" ")[2]) <= len(data)
