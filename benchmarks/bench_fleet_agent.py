"""Fleets at the broker's limits with the fleet agent (docs/scale.md), and an anchor against
mqtt-benchmark (Go) on a mosquitto of the same build and configuration on this machine.

    .venv/bin/python benchmarks/bench_fleet_agent.py scale [--plain 10000] [--tls 2000]
        [--stack openssl] [--duration 60] [--ramp 500] [--receivers backend]
        [--max-connecting 64] [--out DIR]
    .venv/bin/python benchmarks/bench_fleet_agent.py anchor --mqtt-benchmark PATH
        [--clients 1000] [--messages 20] [--max-connecting 64] [--reps 1] [--out DIR]
    .venv/bin/python benchmarks/bench_fleet_agent.py storm [--devices 200] [--reps 5]
        [--stack openssl] [--configs tls1.2,tls1.2/resume] [--max-connecting N] [--out DIR]

``scale`` runs one fleet of ``--plain`` plain devices and one of ``--tls`` TLS 1.2 devices (on
``--stack``; 0 devices: no such fleet) at 1 msg/s for ``--duration`` s, ``--ramp`` connects
per second (0: all due at once), with ``--receivers`` and ``--max-connecting`` as ``run``
takes them, through ``iotsecbench run`` (the fleet agent, one process per core). Per fleet
it prints whether every message was accounted for, the connect rate, set-up and latency
percentiles, the broker's CPU and memory, the lab's CPU per device (the fleet processes' CPU
over the run, per device: what simulating one device at 1 msg/s costs this machine) and the
time and disk the run's storage took.

``anchor`` compares, for ``--clients`` clients, plain and TLS 1.2, QoS 1, 256 B:

- connect rate: clients / the time from the first client's connection attempt to the last
  CONNACK, all starting at once, measured the same way for both tools in a run where each
  client publishes **one** message (mqtt-benchmark's ``-count 1``; the fleet agent's
  ``--duration`` of one message). For the fleet agent the window runs from its first
  emitter's connect() to its last CONNACK as its records give them (its receivers are
  connected before); for mqtt-benchmark, which records no connect times, from the first SYN
  to the broker to the last CONNACK in a capture of loopback (dumpcap, read with tshark; a
  TLS CONNACK is the server's first application-data record of its connection). Without a
  capture (no dumpcap or tshark, or no privilege) mqtt-benchmark's wall time is used: a lower
  bound of its rate. The same window is also given for the ``--messages`` runs ("while
  publishing"): there the clients connected first publish while the others connect, so the
  broker delivers messages during the window. Before 2026-11-26 (issue 38c) the fleet agent's
  connect window was taken from the ``--messages`` run and compared with mqtt-benchmark's
  one-message wall time: the fleet's connects competed with 20 messages per device and their
  deliveries, mqtt-benchmark's with one;
  With ``--reps N`` each tool's one-message run is repeated N times: whether a burst of SYNs
  overflows mosquitto's listen backlog (100) decides between a window of ~0.3 s and one of
  over 1 s (the SYN sent again after 1 s), so one run says little. The rates are given as
  mean [95 % Student t interval] and the ratio is the fleet's mean over mqtt-benchmark's;
- publish rate: messages per second with every client publishing ``--messages`` messages as
  fast as the broker acknowledges them. mqtt-benchmark waits for each PUBACK (one in
  flight per client); the fleet agent keeps up to 20 in flight (paho's default) and its
  receivers also read every message. Its rate is total delivered / (last publish_end − first
  publish_start).

Both tools log in on the same broker configuration (the lab's, with its password file and
ACL): mqtt-benchmark as one account for all its clients, the fleet agent as one account per
emitter and per receiver (the broker checks one password per CONNECT either way). Over TLS
both verify the broker's certificate against the same CA and neither sends a client
certificate (the broker does not ask).

The fleet agent runs unpaced (every connect at once) and with ``--max-connecting`` set-ups in
flight (0: only unpaced), each with one message and with ``--messages``, so the ratios compare
pacing against the same mqtt-benchmark runs.

``storm`` runs ``--configs`` with ``--reps`` repetitions of a reconnect storm (``--storm-at``:
every emitter's link cut 4 s after the start of a 10 s run at 1 msg/s) and gives, per
configuration, the mean over runs with a 95 % Student t interval of: the storm's duration
(the cut to the last device's CONNACK) and the broker's CPU from the cut to the storm's end
(its 10 Hz cumulative CPU samples, the one at or before the cut to the first at or after the
end); and the difference of the second configuration from the first with the i.i.d. bootstrap
over runs the analysis uses (``analysis.over_runs.compare_over_runs``).

mqtt-benchmark is built with the Go toolchain: ``go install
github.com/krylovsk/mqtt-benchmark@v0.2.0`` (or ``go build`` in its source). The broker for it
is the lab's ``MosquittoBroker`` with the embedded broker's settings and a TLS 1.2 listener of
the lab's certificates; its CPU is read from /proc before and after each tool run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
from scipy import stats

from iotsecbench.analysis.over_runs import compare_over_runs
from iotsecbench.errors import EnvironmentProblem
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from iotsecbench.lab.capture import CaptureSite, PacketCapture, capture_problem
from iotsecbench.lab.limits import raise_fd_limit
from iotsecbench.lab.pki import CertificateSet, create_certificates
from iotsecbench.measure.process import process_cpu_ns
from iotsecbench.security import resolve_configuration
from iotsecbench.spec.models import ExperimentSpec

RUN_COLUMNS = (
    "status, error, fleet_size, messages_sent, messages_delivered, messages_lost, "
    "connect_rate_hz, setup_p50_ms, setup_p99_ms, latency_p50_ms, latency_p99_ms, "
    "broker_cpu_mean_percent, broker_cpu_peak_percent, broker_rss_peak_bytes, duration_s"
)


def iotsecbench_run(out: Path, *arguments: str) -> tuple[dict, float]:
    """One ``iotsecbench run`` (1 rep); its runs row and wall time."""
    command = [sys.executable, "-m", "iotsecbench", "run", "--reps", "1", "--out", str(out),
               "--quiet", "--no-report", *arguments]  # fmt: skip
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    wall_s = time.perf_counter() - started
    if not (out / "results.duckdb").exists():
        raise SystemExit(f"refused: {completed.stderr.strip().splitlines()[-1:]}")
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        row = db.execute(f"select {RUN_COLUMNS}, run_dir from runs").fetchone()
        if row is None:
            raise SystemExit(f"no run stored: {completed.stderr.strip()[-500:]}")
        spans = db.execute(
            "select min(t_ns) filter (where kind = 'publish_start'), "
            "max(t_ns) filter (where kind = 'publish_end') from events where agent = 'emitter'"
        ).fetchone()
        connects = db.execute(
            "select min(t_start_ns) filter (where phase = 'tcp_connect'), "
            "max(t_end_ns) filter (where phase = 'mqtt_connect'), "
            # a SYN the full listen backlog dropped is sent again after 1 s (then 3 s, 7 s)
            "count(*) filter (where phase = 'tcp_connect' and wall_ns > 900e6) "
            "from handshakes where agent = 'emitter'"
        ).fetchone()
    names = [c.strip() for c in RUN_COLUMNS.split(",")] + ["run_dir"]
    result = dict(zip(names, row, strict=True))
    result["publish_span_s"] = (spans[1] - spans[0]) / 1e9 if None not in spans else None
    # first emitter's connect() to last CONNACK: the whole fleet's connection, all at once
    result["connect_span_s"] = (connects[1] - connects[0]) / 1e9 if None not in connects else None
    result["syn_resent"] = connects[2]
    return result, wall_s


def lab_cpu(run_dir: Path) -> tuple[float, float]:
    """The fleet processes' CPU seconds and the span of their samples (s)."""
    cpu_s = span_s = 0.0
    for path in run_dir.glob("fleet-*.jsonl"):
        samples = [json.loads(line) for line in path.read_text().splitlines() if '"sample"' in line]
        if samples:
            cpu_s += samples[-1]["cpu_ns"] / 1e9
            span_s = max(span_s, (samples[-1]["t_ns"] - samples[0]["t_ns"]) / 1e9)
    return cpu_s, span_s


def scale(args: argparse.Namespace) -> None:
    for configuration, devices in (("plain", args.plain), ("tls1.2", args.tls)):
        if devices == 0:
            continue
        out = args.out / f"scale-{configuration}-{args.stack}-{devices}"
        options = [
            *(["--ramp", str(args.ramp)] if args.ramp else []),
            *(["--receivers", args.receivers] if args.receivers else []),
            *(["--max-connecting", str(args.max_connecting)] if args.max_connecting else []),
        ]
        result, wall_s = iotsecbench_run(
            out, "--configs", configuration, "--stack", args.stack, "--devices", str(devices),
            "--rate", "1", "--duration", str(args.duration), *options,
        )  # fmt: skip
        run_dir = out / result["run_dir"]
        cpu_s, span_s = lab_cpu(run_dir)
        disk = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
        database = (out / "results.duckdb").stat().st_size
        record = (run_dir / "record.json").stat().st_size
        print(
            f"{configuration} x {devices} ({args.stack}, {' '.join(options)}): {result['status']} "
            f"{result['error'] or ''}\n"
            f"  messages sent {result['messages_sent']}, delivered "
            f"{result['messages_delivered']}, lost {result['messages_lost']}\n"
            f"  connects {result['connect_rate_hz']:.1f}/s, set-up p50/p99 "
            f"{result['setup_p50_ms']:.1f}/{result['setup_p99_ms']:.1f} ms, latency p50/p99 "
            f"{result['latency_p50_ms']:.2f}/{result['latency_p99_ms']:.2f} ms\n"
            f"  broker CPU mean/peak {result['broker_cpu_mean_percent']:.1f}/"
            f"{result['broker_cpu_peak_percent']:.1f} % of a core, RSS "
            f"{result['broker_rss_peak_bytes'] / 2**20:.0f} MiB\n"
            f"  lab: {cpu_s:.1f} CPU s over {span_s:.0f} s for {devices} devices = "
            f"{cpu_s / span_s / devices * 1e6:.0f} µs of CPU per device per second "
            f"({cpu_s / span_s * 100:.0f} % of a core for the fleet)\n"
            f"  wall {wall_s:.0f} s; stored: database {database / 2**20:.1f} MiB, record.json "
            f"{record / 2**20:.1f} MiB, run directory {disk / 2**20:.0f} MiB",
            flush=True,
        )


def wire_connect_window(capture_file: Path, port: int, tls: bool) -> tuple[float, int, int] | None:
    """From a capture of loopback: (first SYN to ``port`` -> last CONNACK, in s; CONNACKs;
    connections whose SYN was sent more than once).
    A connection's CONNACK is the broker's first payload on it: ``20 02`` plain, an
    application-data record (``17 03 03``) over TLS (its handshake records come before)."""
    fields = ["frame.time_epoch", "tcp.srcport", "tcp.dstport", "tcp.flags.syn",
              "tcp.flags.ack", "tcp.payload"]  # fmt: skip
    completed = subprocess.run(
        ["tshark", "-r", str(capture_file), "-T", "fields",
         *(option for field in fields for option in ("-e", field))],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    first_syn, connacks, syns = None, {}, {}
    for line in completed.stdout.splitlines():
        t, source, destination, syn, ack, payload = (line.split("\t") + [""] * 6)[:6]
        if destination == str(port) and syn == "1" and ack == "0":
            first_syn = float(t) if first_syn is None else min(first_syn, float(t))
            syns[source] = syns.get(source, 0) + 1
        elif source == str(port) and payload and destination not in connacks:
            head = payload.replace(":", "")[:6]
            if head.startswith("170303" if tls else "2002"):
                connacks[destination] = float(t)
    if first_syn is None or not connacks:
        return None
    return max(connacks.values()) - first_syn, len(connacks), sum(n > 1 for n in syns.values())


def mqtt_benchmark(program: Path, broker: MosquittoBroker, user: BrokerUser,
                   certificates: CertificateSet | None, clients: int, messages: int,
                   capture_dir: Path | None) -> tuple[float, float, float | None, int]:  # fmt: skip
    """Wall time (s), the broker's CPU (s), the connect window on the wire (s) and the
    connections whose SYN was sent again (None, 0 without ``capture_dir``) of one
    mqtt-benchmark run. Its TLS needs a client certificate and key to verify the CA at all
    (v0.2.0 builds its TLS configuration only then); the broker does not ask for it (not
    mutual), so it is never sent."""
    assert broker.listener is not None and broker.pid is not None
    scheme = "ssl" if certificates is not None else "tcp"
    command = [
        str(program), "-broker", f"{scheme}://localhost:{broker.listener.port}",
        "-clients", str(clients), "-count", str(messages), "-message-interval", "0",
        "-qos", "1", "-size", "256", "-topic", "bench/t", "-quiet", "-format", "json",
        "-username", user.name, "-password", user.password,
        *(
            ["-broker-ca-cert", str(certificates.ca_file), "-client-cert",
             str(certificates.client_cert), "-client-key", str(certificates.client_key)]
            if certificates is not None
            else []
        ),
    ]  # fmt: skip
    port = broker.listener.port
    capture = None
    if capture_dir is not None:
        capture_dir.mkdir(parents=True, exist_ok=True)
        site = CaptureSite("lo", f"tcp port {port}", port, certificates is not None)
        capture = PacketCapture(capture_dir, site).__enter__()
    cpu0, started = process_cpu_ns(broker.pid) or 0, time.perf_counter()
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, check=False, timeout=300
        )
    except subprocess.TimeoutExpired as expired:  # it retries a failed connection forever
        raise SystemExit(f"mqtt-benchmark hung: {str(expired.stderr)[-300:]}") from None
    finally:
        wall_s = time.perf_counter() - started
        cpu_s = ((process_cpu_ns(broker.pid) or 0) - cpu0) / 1e9
        if capture is not None:
            capture.__exit__(None, None, None)
    totals = json.loads(completed.stdout)["totals"] if completed.stdout.strip() else {}
    if completed.returncode != 0 or totals.get("failures", 1):
        raise SystemExit(f"mqtt-benchmark failed: {completed.stderr.strip()[-300:]}")
    window, resent = None, 0
    if capture is not None:
        found = wire_connect_window(capture.raw_path, port, certificates is not None)
        if found is None:
            raise SystemExit(f"no connection of mqtt-benchmark in {capture.raw_path}")
        if found[1] == clients:
            capture.raw_path.unlink(missing_ok=True)  # only the window is kept
        else:  # the window ends at the last CONNACK seen; the capture stays to look at
            print(f"  capture: {found[1]} of {clients} CONNACKs seen ({capture.raw_path}; "
                  f"dumpcap dropped {capture.dropped_packets})", flush=True)  # fmt: skip
        window, resent = found[0], found[2]
    return wall_s, cpu_s, window, resent


def anchor(args: argparse.Namespace) -> None:
    raise_fd_limit(args.clients)
    problem = capture_problem() or (
        None if shutil.which("tshark") else EnvironmentProblem("tshark is not installed")
    )
    if problem is not None:
        print(f"no capture ({problem}): mqtt-benchmark's connect rate is its wall time's, "
              "a lower bound", flush=True)  # fmt: skip
    user = BrokerUser.random("bench", read=["bench/#"], write=["bench/#"])
    defaults = ExperimentSpec()
    for configuration in ("plain", "tls1.2"):
        # the profile and certificates the embedded broker of `run` gets for it
        profile = resolve_configuration(configuration).tls_profile_with(defaults.tls.model_dump())
        certificates = (
            create_certificates(args.out / "pki", profile.certificate, profile.chain_length)
            if profile is not None
            else None
        )
        broker = MosquittoBroker.with_tls(
            args.out / f"broker-{configuration}", [user], profile, certificates,
            settings=defaults.broker,
        )  # fmt: skip
        capture_dir = None if problem is not None else args.out / f"capture-{configuration}"
        with broker:
            ones = [  # the connect rate: one message each, --reps times
                mqtt_benchmark(
                    args.mqtt_benchmark, broker, user, certificates, args.clients, 1, capture_dir
                )
                for _ in range(args.reps)
            ]
            wall_s, cpu_s, window_s, _resent = mqtt_benchmark(
                args.mqtt_benchmark, broker, user, certificates, args.clients, args.messages,
                capture_dir,
            )  # fmt: skip
        total = args.clients * args.messages
        # without a capture, the wall time: a lower bound of mqtt-benchmark's rate
        reference = [args.clients / (window or wall) for wall, _cpu, window, _n in ones]
        wall1_s = ones[0][0]
        print(
            f"mqtt-benchmark {configuration} x {args.clients}: connects "
            f"{'' if ones[0][2] else '>= '}{t_interval(reference)}/s "
            f"({'first SYN to last CONNACK' if ones[0][2] else 'wall time'}, 1 message each; "
            f"runs: {', '.join(f'{r:.0f}' for r in reference)}; connections whose SYN was sent "
            f"again: {', '.join(str(n) for *_rest, n in ones)}; broker "
            f"{np.mean([cpu for _w, cpu, _x, _n in ones]):.2f} CPU s per run)"
            + (f", {args.clients / window_s:.0f}/s while publishing" if window_s else "")
            + f"; {total} messages in {wall_s:.2f} s = {total / wall_s:.0f} msg/s, broker "
            f"{cpu_s:.2f} CPU s",
            flush=True,
        )  # fmt: skip
        rate = 1000.0  # far above what the broker acknowledges: as fast as it goes
        for places in sorted({0, args.max_connecting}):
            pacing = ["--max-connecting", str(places)] if places else []
            label = places or "unpaced"
            runs = [
                iotsecbench_run(
                    args.out / f"anchor-{configuration}-{label}-1-{k}", "--configs",
                    configuration, "--devices", str(args.clients), "--rate", str(rate),
                    "--duration", str(1 / rate), "--raw-devices", "10", *pacing,
                )[0]
                for k in range(args.reps)
            ]  # fmt: skip
            result, _wall = iotsecbench_run(
                args.out / f"anchor-{configuration}-{label}-{args.messages}",
                "--configs", configuration, "--devices", str(args.clients), "--rate", str(rate),
                "--duration", str(args.messages / rate), "--raw-devices", "10", *pacing,
            )  # fmt: skip
            rates = [args.clients / run["connect_span_s"] for run in runs]
            span, busy_s = result["publish_span_s"], result["connect_span_s"]
            print(
                f"fleet agent    {configuration} x {args.clients} "
                f"({f'{places} set-ups in flight' if places else 'unpaced'}): connects "
                f"{t_interval(rates)}/s (1 message each; runs: "
                f"{', '.join(f'{r:.0f}' for r in rates)}; connections whose SYN was sent again: "
                f"{', '.join(str(run['syn_resent']) for run in runs)}), "
                f"{np.mean(rates) / np.mean(reference):.2f}x mqtt-benchmark's (ratio of means); "
                f"{args.clients / busy_s:.0f}/s while publishing"
                + (f" ({window_s / busy_s:.2f}x)" if window_s else "")
                + f" (before issue 38c's definition: {wall1_s / busy_s:.2f}x)"
                + f"; {result['messages_delivered']} of {result['messages_sent']} delivered, "
                f"publishing {span:.2f} s = {result['messages_delivered'] / span:.0f} msg/s "
                f"({result['messages_delivered'] / span / (total / wall_s):.2f}x); broker mean "
                f"{result['broker_cpu_mean_percent']:.0f} % of a core "
                f"({', '.join(run['status'] for run in runs)}; {result['status']})",
                flush=True,
            )


STORM_QUERY = """
with cut as (
  select run_id, min(json_extract(detail_json, '$.t_cut_ns')::bigint) as t_cut,
    max(json_extract(detail_json, '$.t_start_ns')::bigint
        + json_extract(detail_json, '$.wall_ns')::bigint) as t_end,
    count(*) as reconnections,
    sum(json_extract(detail_json, '$.resumed')::boolean::int) as resumed
  from events where kind = 'reconnected' group by run_id
)
select r.configuration, r.run_id, r.status, r.messages_sent, r.messages_delivered,
  c.reconnections, c.resumed, (c.t_end - c.t_cut) / 1e6 as storm_ms,
  ((select min(s.cpu_ns) from samples s
    where s.run_id = r.run_id and s.agent = 'broker' and s.t_ns >= c.t_end)
   - (select max(s.cpu_ns) from samples s
      where s.run_id = r.run_id and s.agent = 'broker' and s.t_ns <= c.t_cut)) / 1e6
   as broker_cpu_ms
from runs r join cut c using (run_id) order by r.configuration, r.run_id
"""


def t_interval(values: list[float]) -> str:
    array = np.asarray(values, dtype=float)
    mean = array.mean()
    if array.size < 2:
        return f"{mean:.1f}"
    half = stats.t.ppf(0.975, array.size - 1) * array.std(ddof=1) / np.sqrt(array.size)
    return f"{mean:.1f} [{mean - half:.1f}, {mean + half:.1f}]"


def storm(args: argparse.Namespace) -> None:
    out = args.out / f"storm-{args.stack}-{args.devices}-{args.max_connecting or 'unpaced'}"
    pacing = ["--max-connecting", str(args.max_connecting)] if args.max_connecting else []
    command = [sys.executable, "-m", "iotsecbench", "run", "--configs", args.configs,
               "--stack", args.stack, "--devices", str(args.devices), "--duration", "10",
               "--rate", "1", "--storm-at", "4", "--reps", str(args.reps), "--out", str(out),
               "--quiet", "--no-report", *pacing]  # fmt: skip
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if not (out / "results.duckdb").exists():
        raise SystemExit(f"refused: {completed.stderr.strip().splitlines()[-1:]}")
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rows = db.execute(STORM_QUERY).fetchall()
    by_configuration: dict[str, list[tuple]] = {}
    for row in rows:
        by_configuration.setdefault(row[0], []).append(row)
    for configuration, runs in by_configuration.items():
        print(
            f"{configuration} x {args.devices} ({args.stack}, "
            f"{f'{args.max_connecting} set-ups in flight' if pacing else 'unpaced'}), "
            f"{len(runs)} runs: "
            f"{sum(r[4] for r in runs)} of {sum(r[3] for r in runs)} delivered, "
            f"{sum(r[6] for r in runs)} of {sum(r[5] for r in runs)} reconnections resumed; "
            f"storm {t_interval([r[7] for r in runs])} ms, broker CPU over it "
            f"{t_interval([r[8] for r in runs])} ms (mean [95 % t interval])",
            flush=True,
        )
    names = list(by_configuration)
    if len(names) == 2:
        a, b = names[1], names[0]
        for metric, column in (("storm_ms", 7), ("broker_cpu_ms", 8)):
            found = compare_over_runs(
                metric, "broker", a, b,
                np.array([r[column] for r in by_configuration[a]]),
                np.array([r[column] for r in by_configuration[b]]), seed=3,
            )  # fmt: skip
            if found is not None:
                print(
                    f"  {metric}: {a} - {b} = {found.difference:.1f} "
                    f"[{found.interval.low:.1f}, {found.interval.high:.1f}] "
                    f"({found.interval.method})",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    scaling = commands.add_parser("scale")
    scaling.add_argument("--plain", type=int, default=10_000)
    scaling.add_argument("--tls", type=int, default=2_000)
    scaling.add_argument("--stack", default="openssl")
    scaling.add_argument("--duration", type=float, default=60)
    scaling.add_argument("--ramp", type=float, default=500)
    scaling.add_argument("--receivers", choices=("devices", "backend"), default=None)
    anchoring = commands.add_parser("anchor")
    anchoring.add_argument("--mqtt-benchmark", type=Path, required=True)
    anchoring.add_argument("--clients", type=int, default=1000)
    anchoring.add_argument("--messages", type=int, default=20)
    anchoring.add_argument("--reps", type=int, default=1)
    storming = commands.add_parser("storm")
    storming.add_argument("--devices", type=int, default=200)
    storming.add_argument("--reps", type=int, default=5)
    storming.add_argument("--stack", default="openssl")
    storming.add_argument("--configs", default="tls1.2,tls1.2/resume")
    storming.add_argument("--max-connecting", type=int, default=0)
    storming.add_argument("--out", type=Path, default=None)
    for sub in (scaling, anchoring):
        sub.add_argument("--max-connecting", type=int, default=0 if sub is scaling else 64)
        sub.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    args.out = args.out or Path(tempfile.mkdtemp(prefix="bench-fleet-agent-"))
    print(f"results under {args.out}", flush=True)
    {"scale": scale, "anchor": anchor, "storm": storm}[args.command](args)


if __name__ == "__main__":
    main()
