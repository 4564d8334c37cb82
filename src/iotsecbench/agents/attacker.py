"""The attacker: a third broker client, started only by the test suite's fault hook
(``IOTSB_TEST_FAULT="attacker:forge@<run id part>"``, runner/local.py), that tries the
receiver's defences with copies of the run's real messages.

Its account may read and write the run's data topic and nothing else (the broker's ACL). For
every ``ROUND`` real messages it sees, it publishes one of each forgery below, so the receiver
meets them mid-run, interleaved with genuine traffic:

* ``tampered``  — the message with one byte flipped: the top byte of its sequence number
  (authenticated by every sequenced scheme, and new, so no replay check stops it first), or
  for schemes without one the first byte after the header (the IV of CBC, which flips the
  same bit of the first plaintext block);
* ``replayed``  — the message again, unchanged;
* ``reordered`` — a copy of an *older* message, sent after newer ones arrived;
* ``truncated`` — the message cut to its header and nonce, shorter than any valid body;
* ``wrong-key`` — a well-formed message sealed by the same scheme under keys the attacker
  made up, with a fresh sequence number.

Each forgery is recorded as an event (``forged``: kind, the original's sequence number, bytes),
so a test can match the receiver's counters against what was sent, exactly. The receiver never
learns which messages were forged; a forgery it accepts shows up as a delivered message the
emitter never sent (``status = 'forged'`` in the store).
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import time
from pathlib import Path

import paho.mqtt.client as mqtt

from iotsecbench.agents.config import AgentConfig
from iotsecbench.agents.records import RecordWriter
from iotsecbench.measure.clock import now_ns
from iotsecbench.security import resolve_configuration
from iotsecbench.security.schemes.base import (
    SEQ_BYTES,
    SESSION_ID_BYTES,
    PayloadScheme,
)

ROUND = 5  # real messages per round of forgeries
FRESH_SEQ = 1 << 62  # far beyond any real sequence number: no replay check stops it
KINDS = ("tampered", "replayed", "reordered", "truncated", "wrong-key")


def forgeries(
    scheme: PayloadScheme, latest: bytes, older: bytes, wrong_key_plaintext: bytes
) -> list[tuple[str, bytes]]:
    """One forgery of each kind from the latest real message and an older one (pure)."""
    header = scheme.header_bytes if scheme.framed else 0
    tampered = bytearray(latest)
    tampered[min(header - SEQ_BYTES if scheme.sequenced else header, len(latest) - 1)] ^= 0x80
    # Header and nonce without a body: below every framed scheme's minimum length.
    truncated = latest[: header + scheme.explicit_nonce_bytes] if header else latest[:1]
    made_up = scheme.random_keys(os.urandom(SESSION_ID_BYTES))
    return [
        ("tampered", bytes(tampered)),
        ("replayed", latest),
        ("reordered", older),
        ("truncated", truncated),
        ("wrong-key", scheme.sealer(made_up, first_seq=FRESH_SEQ).seal(wrong_key_plaintext)),
    ]


def attack(config: AgentConfig) -> None:
    # The runner stops the attacker with SIGTERM: leave through ``finally`` (counters).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    scheme = resolve_configuration(config.configuration).scheme
    writer = RecordWriter(Path(config.output))
    seen: queue.Queue[bytes] = queue.Queue()
    client = mqtt.Client(
        callback_api_version=mqtt.CallbackAPIVersion.VERSION2,
        client_id=config.client_id,
        protocol=mqtt.MQTTv311,
    )
    client.username_pw_set(config.username, config.password)
    if config.tls is not None:
        client.tls_set(ca_certs=config.tls.ca_file)
    data = f"{config.topic_prefix}/data"
    client.on_connect = lambda c, *_: c.subscribe(data, qos=1)
    client.on_message = lambda _c, _u, message: seen.put(bytes(message.payload))
    client.connect(config.host, config.port, keepalive=30)
    client.loop_start()
    writer.write("event", t_ns=now_ns(), kind="attacker_start", detail={})
    history: list[bytes] = []  # the real messages, in arrival order
    known: set[bytes] = set()  # everything seen or sent: the subscription echoes our own
    sent = dict.fromkeys(KINDS, 0)
    deadline = time.monotonic() + config.duration_s + config.connect_timeout_s
    try:
        while time.monotonic() < deadline:
            try:
                message = seen.get(timeout=0.2)
            except queue.Empty:
                continue
            if message in known:
                continue
            known.add(message)
            history.append(message)
            # The last rounds stay out: every forgery must reach the receiver before the end.
            if len(history) % ROUND or len(history) > config.message_count - 2 * ROUND:
                continue
            # Any plaintext will do: the made-up key makes it a forgery whatever it says.
            for kind, forged in forgeries(scheme, history[-1], history[-3], message[:64]):
                known.add(forged)
                client.publish(data, forged, qos=1).wait_for_publish(5)
                sent[kind] += 1
                writer.write(
                    "event",
                    t_ns=now_ns(),
                    kind="forged",
                    detail={"forgery": kind, "bytes": len(forged)},
                )
                writer.flush()
    finally:
        for kind, count in sent.items():
            writer.write("counters", name=f"forged_{kind}", value=count)
        client.loop_stop()
        client.disconnect()
        writer.close()


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "--config":
        raise SystemExit("usage: python -m iotsecbench.agents.attacker --config FILE")
    attack(AgentConfig.from_file(Path(args[1])))


if __name__ == "__main__":
    main()
