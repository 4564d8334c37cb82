"""The native agent's publish rate against a tight libmosquitto loop, same broker, same run.

Each pair: the native emitter (``--rate max``: saturating, QoS 0, 1 KiB) for SECONDS, then
``benchmarks/native/mosquitto_loop.c`` (libmosquitto's publish + loop_write, as fast as it
takes them) for as long, both pinned to CPU 1 with the broker on CPU 0; the ratio
native / libmosquitto per pair (the vCPUs drift: only same-run ratios mean something).
Plain MQTT and TLS 1.2 (the native agent on mbedTLS and on wolfSSL; libmosquitto on OpenSSL).

    .venv/bin/python benchmarks/bench_native_publish.py [--pairs 5] [--seconds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from iotsecbench.agents import native
from iotsecbench.agents.config import AgentConfig, TlsClientFiles
from iotsecbench.agents.records import read_records
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from iotsecbench.lab.pki import create_certificates
from iotsecbench.security.tls import parse_profile

HERE = Path(__file__).resolve().parent
PAYLOAD = 1024


def build_reference(work: Path) -> Path:
    program = work / "mosquitto_loop"
    subprocess.run(
        [
            "gcc",
            "-O2",
            str(HERE / "native" / "mosquitto_loop.c"),
            "-lmosquitto",
            "-o",
            str(program),
        ],
        check=True,
    )
    return program


def native_rate(work: Path, stack: str, broker: MosquittoBroker, user: BrokerUser,
                tls: TlsClientFiles | None, seconds: float) -> float:  # fmt: skip
    assert broker.listener is not None
    config = AgentConfig(
        role="emitter", run_id="bench", configuration="tls1.2" if tls else "plain",
        host=broker.listener.host, port=broker.listener.port, username=user.name,
        password=user.password, client_id="iotsb-bench", topic_prefix="iotsb/0123456789ab",
        payload_bytes=PAYLOAD, duration_s=seconds, qos=0, saturating=True,
        output=str(work / "emitter.jsonl"), tls=tls,
    )  # fmt: skip
    path = work / "emitter.json"
    path.write_text(config.to_json())
    program = native.binary(native.build_for(stack, tls=tls is not None, scheme=False))
    subprocess.run(["taskset", "-c", "1", str(program), "--config", str(path)], check=True)
    messages = [r for r in read_records(work / "emitter.jsonl") if r["type"] == "message"]
    span = (messages[-1]["t_published_ns"] - messages[0]["t_created_ns"]) / 1e9
    return len(messages) / span


def reference_rate(program: Path, broker: MosquittoBroker, user: BrokerUser,
                   ca_file: str | None, seconds: float) -> float:  # fmt: skip
    assert broker.listener is not None
    argv = [
        "taskset", "-c", "1", str(program), broker.listener.host, str(broker.listener.port),
        user.name, user.password, "iotsb/0123456789ab/data", str(PAYLOAD), str(seconds),
    ]  # fmt: skip
    output = subprocess.run(
        [*argv, *([ca_file] if ca_file else [])], capture_output=True, text=True, check=True
    ).stdout.split()
    sent, elapsed, written = int(output[0]), float(output[1]), int(output[2])
    if written < 0.95 * sent * PAYLOAD:  # queued in the library but never on the socket
        raise SystemExit(f"libmosquitto wrote {written} B for {sent} messages: not a rate")
    return sent / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        reference = build_reference(work)
        user = BrokerUser.random(
            "emitter", [], ["iotsb/0123456789ab/data", "iotsb/0123456789ab/ctl/end"]
        )
        print("| transport | stack | native msg/s | libmosquitto msg/s | native/libmosquitto |")
        print("|---|---|---|---|---|")
        for profile_name, stacks in (
            (None, ("mbedtls",)),
            ("tls1.2/x25519/ecdsa-p256", ("mbedtls", "wolfssl")),
        ):
            profile = parse_profile(profile_name) if profile_name else None
            certs = create_certificates(work / "pki", profile.certificate) if profile else None
            tls = (
                TlsClientFiles(profile.to_dict(), str(certs.ca_file)) if profile and certs else None
            )
            for stack in stacks:
                broker = MosquittoBroker.with_tls(work / f"broker-{stack}", [user], profile, certs)
                with broker:
                    subprocess.run(["taskset", "-pc", "0", str(broker.pid)], capture_output=True)
                    pairs = []
                    for _ in range(args.pairs):
                        a = native_rate(work, stack, broker, user, tls, args.seconds)
                        b = reference_rate(
                            reference, broker, user, tls and tls.ca_file, args.seconds
                        )
                        pairs.append((a, b))
                ratios = [a / b for a, b in pairs]
                name = "plain" if profile is None else "TLS 1.2"
                print(
                    f"| {name} | {stack if profile else '(plain build)'} | "
                    f"{statistics.median(a for a, _ in pairs):,.0f} | "
                    f"{statistics.median(b for _, b in pairs):,.0f} | "
                    f"×{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
