"""Benchmark (not a test): the tcp transport's saturating emitter against a plain socket loop.

Both send 1460-byte cleartext blocks in the same frames over loopback TCP for the same time,
to a reader that parses every frame: first the real agents (`python -m iotsecbench.agents.tcp`,
scheme `none`, saturating, records and 10 Hz samples included), then a bare loop in this
process (frame, sendall; a thread reads frames). Alternated `--rounds` times, so drift of the
machine hits both; the ratio agent/loop is taken per round.

    .venv/bin/python benchmarks/bench_tcp_transport.py [--seconds 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from iotsecbench.agents import framing, wire
from iotsecbench.agents.config import AgentConfig
from iotsecbench.lab.broker import free_port

BLOCK = 1460


def agents_blocks_per_s(seconds: float, work: Path) -> float:
    port = free_port()
    paths = {}
    for role in ("receiver", "emitter"):
        config = AgentConfig(
            role=role, run_id="bench", configuration="none", host="127.0.0.1", port=port,
            username="", password="", payload_bytes=BLOCK, duration_s=seconds,
            output=str(work / f"{role}.jsonl"), transport="tcp", saturating=True,
        )  # fmt: skip
        paths[role] = work / f"{role}.json"
        paths[role].write_text(config.to_json())
    command = [sys.executable, "-m", "iotsecbench.agents.tcp", "--config"]
    receiver = subprocess.Popen([*command, str(paths["receiver"])], stdout=subprocess.PIPE)
    assert receiver.stdout is not None and receiver.stdout.readline().strip() == b"READY"
    subprocess.run([*command, str(paths["emitter"])], check=True)
    receiver.wait(60)
    messages = [
        json.loads(line)
        for line in (work / "emitter.jsonl").read_text().splitlines()
        if '"message"' in line
    ]
    span = (messages[-1]["t_published_ns"] - messages[0]["t_created_ns"]) / 1e9
    return len(messages) / span


def loop_blocks_per_s(seconds: float) -> float:
    listener = socket.create_server(("127.0.0.1", 0))
    received = [0]

    def sink() -> None:
        connection, _ = listener.accept()
        while framing.read_frame(connection) is not None:
            received[0] += 1
        connection.close()

    reader = threading.Thread(target=sink)
    reader.start()
    sender = socket.create_connection(listener.getsockname())
    sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    filler = wire.make_filler(BLOCK, 0)
    sent, start = 0, time.monotonic_ns()
    end = start + int(seconds * 1e9)
    while time.monotonic_ns() < end:
        sender.sendall(framing.encode(b"D", wire.encode(sent, time.monotonic_ns(), filler)))
        sent += 1
    span = (time.monotonic_ns() - start) / 1e9
    sender.close()
    reader.join()
    listener.close()
    return sent / span


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(args.rounds):
            agent = agents_blocks_per_s(args.seconds, Path(directory))
            loop = loop_blocks_per_s(args.seconds)
            ratios.append(agent / loop)
            ratio = agent / loop
            print(f"agents {agent:9.0f} blocks/s  loop {loop:9.0f} blocks/s  ratio {ratio:.2f}")
    print(f"median ratio agents/loop: {statistics.median(ratios):.2f} (goal >= 0.8)")


if __name__ == "__main__":
    main()
