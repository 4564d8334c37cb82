"""``bench handshake``: repeated full MQTT-over-TLS connections per TLS profile, each split into
computing and waiting, with confidence intervals.

Method:

* one embedded mosquitto per profile (the profile's listener, certificate chain and group
  configuration, exactly as ``iotsecbench run`` builds it), all up before the first handshake;
* every repetition is one paho-mqtt client doing what a device does — TCP connect, TLS
  handshake, MQTT CONNECT → CONNACK, DISCONNECT — in the calling thread (``loop()``, no
  network thread), so the thread's CPU time is the client's computing;
* profiles are **interleaved**: each round visits every profile still measuring in a seeded
  random order, so drift of the machine spreads over all profiles alike;
* ``warmup`` connections per profile first (imports, caches; for a resumption profile also
  the session the first measured connection resumes), never measured;
* each handshake's negotiated parameters are read from the live connection and checked
  against the profile (a mismatch ends the benchmark: the numbers would belong to something
  else); TCP_INFO is read around the handshake for bytes, segments and retransmissions;
* per profile: mean, SD, median and the 95 % Student-t confidence interval of the mean, for
  the TLS handshake's wall time, CPU time and waiting time and for the whole connect;
  ``target_ci`` repeats a profile until the half-width of both the wall- and the CPU-time
  interval is below that fraction of the mean (as the ``iotst`` study does), at most
  ``max_repetitions`` times.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import ssl
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from scipy import stats

from iotsecbench.agents.handshake import TimedClient, TlsHandshakeMeasurement
from iotsecbench.errors import SpecError
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker, mosquitto_version
from iotsecbench.lab.pki import create_certificates
from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.cpu import thread_cpu_ns
from iotsecbench.measure.host import host_facts, software_versions
from iotsecbench.runner.collect import TLS_FACTS, collect
from iotsecbench.security.tls import (
    HandshakeObserver,
    TlsProfile,
    client_context,
    parse_profile,
    verify_negotiated,
)

FORMAT_VERSION = 1  # version 1: first format (one record per profile, raw samples included)
CONFIDENCE = 0.95
DEFAULT_REPETITIONS = 30
DEFAULT_MAX_REPETITIONS = 1000
MIN_REPETITIONS = 5  # below this a t interval says little; --target-ci never stops earlier
CONNACK_TIMEOUT_S = 10.0


class HandshakeMismatch(RuntimeError):
    """A handshake negotiated something other than its profile asks for."""


@dataclass(frozen=True)
class Statistic:
    """Mean, SD, median and the Student-t confidence interval of the mean, in ns."""

    n: int
    mean: float
    sd: float
    median: float
    ci_low: float
    ci_high: float
    level: float = CONFIDENCE

    @classmethod
    def of(cls, values: Sequence[float], level: float = CONFIDENCE) -> Statistic:
        n = len(values)
        if n == 0:
            nan = float("nan")
            return cls(0, nan, nan, nan, nan, nan, level)
        mean = statistics.fmean(values)
        sd = statistics.stdev(values) if n > 1 else float("nan")
        half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n) if n > 1 else math.inf
        return cls(n, mean, sd, statistics.median(values), mean - half, mean + half, level)

    @property
    def relative_half_width(self) -> float:
        """CI half-width as a fraction of the mean (inf when undefined)."""
        if not self.n or not self.mean or math.isinf(self.ci_high):
            return math.inf
        return (self.ci_high - self.ci_low) / 2 / abs(self.mean)


@dataclass(frozen=True)
class HandshakeSample:
    """One measured connection (all times monotonic ns; CPU is the client thread's)."""

    repetition: int  # the profile's measured repetition, from 0
    order: int  # position in the whole benchmark's sequence of connections
    t_start_ns: int  # TCP connect started
    tcp_connect_ns: int
    tcp_connect_cpu_ns: int
    tls: TlsHandshakeMeasurement
    t_ready_ns: int  # socket ready (TLS done, CONNECT sent)
    t_connack_ns: int  # CONNACK received
    mqtt_connect_cpu_ns: int  # thread CPU from socket ready to CONNACK
    total_cpu_ns: int  # thread CPU from TCP connect to CONNACK
    negotiated: dict[str, Any]

    @property
    def total_ns(self) -> int:
        return self.t_connack_ns - self.t_start_ns

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["tls"] = self.tls.to_dict()
        record["total_ns"] = self.total_ns
        return record


METRICS: dict[str, Callable[[HandshakeSample], float]] = {
    "tls_wall_ns": lambda s: s.tls.wall_ns,
    "tls_cpu_ns": lambda s: s.tls.thread_cpu_ns,
    "tls_wait_ns": lambda s: s.tls.wait_ns,
    "connect_wall_ns": lambda s: s.total_ns,  # TCP connect start -> CONNACK
    "connect_cpu_ns": lambda s: s.total_cpu_ns,
}


@dataclass
class ProfileResult:
    """The measured connections of one profile."""

    profile: TlsProfile
    samples: list[HandshakeSample] = field(default_factory=list)
    broker_version: str = ""

    @property
    def name(self) -> str:
        return self.profile.name

    def statistic(self, metric: str) -> Statistic:
        return Statistic.of([METRICS[metric](s) for s in self.samples])

    def converged(self, target: float) -> bool:
        return len(self.samples) >= MIN_REPETITIONS and all(
            self.statistic(m).relative_half_width < target for m in ("tls_wall_ns", "tls_cpu_ns")
        )

    def summary(self) -> dict[str, Any]:
        """Statistics, the negotiated parameters and the wire counts of the median handshake."""
        first = self.samples[0].negotiated if self.samples else {}
        wire = (
            {
                key: statistics.median([getattr(s.tls, key) or 0 for s in self.samples])
                for key in (
                    "tcp_bytes_sent",
                    "tcp_bytes_received",
                    "tcp_segments_out",
                    "tcp_segments_in",
                )
            }
            if self.samples
            else {}
        )
        return {
            "profile": self.name,
            "repetitions": len(self.samples),
            "statistics": {m: asdict(self.statistic(m)) for m in METRICS},
            "negotiated": {
                k: first.get(k)
                for k in (
                    "version",
                    "cipher",
                    "group",
                    "signature_algorithm",
                    "certificate",
                    "server_certificates_sent",
                    "round_trips",
                    "resumed",
                    "client_certificate_sent",
                    "handshake_bytes_sent",
                    "handshake_bytes_received",
                )
            },
            "median_wire": wire,
            "retransmissions": sum(s.tls.tcp_retransmissions or 0 for s in self.samples),
        }


@dataclass
class HandshakeBenchmark:
    """Every profile's result plus the environment: what ``--json`` writes."""

    results: list[ProfileResult]
    environment: dict[str, Any]
    settings: dict[str, Any]

    def to_json(self) -> str:
        document = {
            "format": "iotsecbench-bench-handshake",
            "version": FORMAT_VERSION,
            "environment": self.environment,
            "settings": self.settings,
            "profiles": [
                {
                    **r.summary(),
                    "tls_profile": r.profile.to_dict(),
                    "samples": [s.to_dict() for s in r.samples],
                }
                for r in self.results
            ],
        }
        return json.dumps(document, indent=1, default=str)


def resolve_profiles(names: Sequence[str]) -> list[TlsProfile]:
    """Profiles from short names (``parse_profile``); SpecError for duplicates or bad names."""
    profiles = [parse_profile(name) for name in names]
    seen = [p.name for p in profiles]
    duplicates = sorted({n for n in seen if seen.count(n) > 1})
    if duplicates:
        raise SpecError(f"profile(s) listed twice: {', '.join(duplicates)}")
    if not profiles:
        raise SpecError("no TLS profile given (--profiles tls1.3/x25519/ecdsa-p256,…)")
    return profiles


def environment(broker_version: str | None = None) -> dict[str, Any]:
    """Host and software versions (``measure.host``), as every command stores them."""
    return {**host_facts(), **software_versions(broker_version)}


@dataclass
class _Lab:
    """One profile's broker, client context and account."""

    result: ProfileResult
    broker: MosquittoBroker
    context: ssl.SSLContext
    observer: HandshakeObserver
    user: BrokerUser
    session: ssl.SSLSession | None = None
    connections: int = 0


def _connect_once(lab: _Lab) -> HandshakeSample | None:
    """One connect → CONNACK → disconnect; returns the measurement (None for a warm-up)."""
    assert lab.broker.listener is not None
    profile = lab.result.profile
    offer = lab.session if profile.resumption else None
    client = TimedClient(
        handshake_timeout_s=CONNACK_TIMEOUT_S,
        callback_api_version=mqtt.CallbackAPIVersion.VERSION2,
        client_id=f"iotsb-bench-{lab.connections}",
        protocol=mqtt.MQTTv311,
    )
    client.tls_session = offer
    lab.connections += 1
    client.username_pw_set(lab.user.name, lab.user.password)
    client.tls_set_context(lab.context)
    acknowledged: list[Any] = []
    client.on_connect = lambda c, u, flags, reason, props: acknowledged.append(reason)
    cpu_start = thread_cpu_ns()
    client.connect(lab.broker.listener.host, lab.broker.listener.port, keepalive=60)
    t_ready = now_ns()
    cpu_ready = thread_cpu_ns()
    deadline = t_ready + int(CONNACK_TIMEOUT_S * 1e9)
    while not acknowledged and now_ns() < deadline:
        client.loop(timeout=1.0)
    t_connack, cpu_end = now_ns(), thread_cpu_ns()
    if not acknowledged or acknowledged[0].is_failure:
        raise HandshakeMismatch(f"{profile.name}: no CONNACK from the broker ({acknowledged})")
    sock = client.socket()
    negotiated = lab.observer.negotiated(sock)  # type: ignore[arg-type]
    lab.session = getattr(sock, "session", None)
    client.disconnect()
    with contextlib.suppress(Exception):
        client.loop(timeout=0.01)
    expect_resumed = profile.resumption and offer is not None
    try:
        verify_negotiated(profile, negotiated, expect_resumed=expect_resumed)
    except ValueError as error:
        raise HandshakeMismatch(f"{profile.name}: {error}") from None
    if offer is None and profile.resumption:
        return None  # the priming connection of a resumption profile is never measured
    assert client.tcp_connect is not None and client.tls_handshake is not None
    tcp_start, tcp_end, tcp_cpu = client.tcp_connect
    return HandshakeSample(
        repetition=len(lab.result.samples),
        order=0,
        t_start_ns=tcp_start,
        tcp_connect_ns=tcp_end - tcp_start,
        tcp_connect_cpu_ns=tcp_cpu,
        tls=client.tls_handshake,
        t_ready_ns=t_ready,
        t_connack_ns=t_connack,
        mqtt_connect_cpu_ns=cpu_end - cpu_ready,
        total_cpu_ns=cpu_end - cpu_start,
        negotiated=negotiated.to_dict(),
    )


ProgressCallback = Callable[[ProfileResult, int, int], None]  # result, done, planned


def run_handshake_benchmark(
    profiles: Sequence[TlsProfile],
    work_dir: Path,
    *,
    repetitions: int | None = None,
    target_ci: float | None = None,
    max_repetitions: int = DEFAULT_MAX_REPETITIONS,
    warmup: int = 1,
    seed: int = 1,
    on_progress: ProgressCallback | None = None,
    on_profile_done: Callable[[ProfileResult], None] | None = None,
) -> HandshakeBenchmark:
    """Measure every profile against its own embedded broker, interleaved (module docstring)."""
    if repetitions is not None and target_ci is not None:
        raise SpecError("give --reps or --target-ci, not both")
    if target_ci is not None and not 0 < target_ci < 1:
        raise SpecError(f"--target-ci must be a fraction between 0 and 1, got {target_ci}")
    planned = (
        repetitions
        if repetitions is not None
        else (max_repetitions if target_ci is not None else DEFAULT_REPETITIONS)
    )
    if planned < 2 or max_repetitions < 2:
        raise SpecError("at least 2 repetitions are needed for a confidence interval")
    work_dir = Path(work_dir)
    rng = random.Random(seed)
    labs: list[_Lab] = []
    with contextlib.ExitStack() as stack:
        version = mosquitto_version()
        for index, profile in enumerate(profiles):
            certs = create_certificates(work_dir / "pki", profile.certificate, profile.chain_length)
            user = BrokerUser.random("bench", read=[], write=[])
            broker = MosquittoBroker.with_tls(
                work_dir / "brokers" / f"{index:02d}", [user], profile, certs
            )
            stack.enter_context(broker)
            context = client_context(
                profile,
                certs.ca_file,
                certs.client_cert if profile.mutual else None,
                certs.client_key if profile.mutual else None,
            )
            observer = HandshakeObserver()
            observer.install(context)
            lab = _Lab(
                ProfileResult(profile, broker_version=version), broker, context, observer, user
            )
            labs.append(lab)
            for _ in range(warmup + (1 if profile.resumption else 0)):
                _connect_once(lab)
        order = 0
        active = list(labs)
        while active:
            rng.shuffle(active)
            for lab in list(active):
                sample = _connect_once(lab)
                assert sample is not None
                sample = HandshakeSample(**{**sample.__dict__, "order": order})
                order += 1
                lab.result.samples.append(sample)
                done = len(lab.result.samples)
                finished = done >= planned or (
                    target_ci is not None and lab.result.converged(target_ci)
                )
                if on_progress is not None:
                    on_progress(lab.result, done, done if finished else planned)
                if finished:
                    active.remove(lab)
                    if on_profile_done is not None:
                        on_profile_done(lab.result)
    return HandshakeBenchmark(
        [lab.result for lab in labs],
        environment(version),
        {
            "repetitions": repetitions,
            "target_ci": target_ci,
            "max_repetitions": max_repetitions,
            "warmup": warmup,
            "seed": seed,
            "confidence": CONFIDENCE,
        },
    )


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def _handshake_records(sample: HandshakeSample) -> list[dict[str, Any]]:
    """One connection's three phases as the agents record them (``agents.records``), so the
    runner's ``collect`` turns them into ``handshakes`` rows."""
    common = {"repetition": sample.repetition, "order": sample.order}
    phases = [
        ("tcp_connect", sample.t_start_ns, sample.t_start_ns + sample.tcp_connect_ns,
         sample.tcp_connect_cpu_ns, common),
        ("tls_handshake", sample.tls.t_start_ns, sample.tls.t_end_ns, sample.tls.thread_cpu_ns,
         {**common, **sample.tls.to_dict(), "negotiated": sample.negotiated}),
        ("mqtt_connect", sample.t_ready_ns, sample.t_connack_ns, sample.mqtt_connect_cpu_ns,
         {**common, "cpu_scope": "thread (no network thread)"}),
    ]  # fmt: skip
    return [
        {"type": "handshake", "phase": phase, "t_start_ns": start, "t_end_ns": end,
         "wall_ns": end - start, "cpu_ns": cpu, "detail": detail}
        for phase, start, end, cpu, detail in phases
    ]  # fmt: skip


def store_results(bench: HandshakeBenchmark, results_dir: Path) -> Path:
    """Write the benchmark as a results store ``iotsecbench report`` reads: one ``runs`` row
    per profile (statistics and negotiated parameters in ``details_json``) and, per measured
    connection, its ``tcp_connect``, ``tls_handshake`` and ``mqtt_connect`` phases in
    ``handshakes`` (agent ``emitter``: the benchmark's client is the device)."""
    import datetime
    import hashlib
    import uuid

    from iotsecbench.store.duckdb_store import ResultsStore

    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    spec = {
        "name": "bench-handshake",
        "profiles": [r.name for r in bench.results],
        **bench.settings,
    }
    canonical = json.dumps(spec, sort_keys=True)
    with ResultsStore.open(results_dir) as store:
        experiment_id = store.ensure_experiment(
            {
                "experiment_id": f"bench-handshake-{uuid.uuid4().hex[:8]}",
                "name": "bench-handshake",
                "created_utc": now,
                "spec_json": spec,
                "config_hash": hashlib.sha256(canonical.encode()).hexdigest()[:16],
                "seed": bench.settings.get("seed"),
                "host_json": host_facts(),
                "versions_json": software_versions(bench.results[0].broker_version or None),
            },
            resume=False,
        )
        for index, result in enumerate(bench.results):
            run_id = f"handshake-{index:02d}-{_slug(result.name)}"
            summary = result.summary()
            run_dir = results_dir / "runs" / run_id
            run_dir.mkdir(parents=True, exist_ok=True)
            records = [{"type": "negotiated", **sample.negotiated} for sample in result.samples[:1]]
            for sample in result.samples:
                records += _handshake_records(sample)
            facts, tables = collect(run_id, {"emitter": records}, payload_bytes=0, device=None)
            store.write_run(
                {
                    "run_id": run_id,
                    "experiment_id": experiment_id,
                    "cell_id": _slug(result.name),
                    "cell_label": result.name,
                    "configuration": f"tls{result.profile.version}",
                    "transport": f"tls{result.profile.version}",
                    "scheme": "none",
                    "payload_bytes": 0,
                    "rate_hz": 0.0,
                    "qos": 0,
                    "duration_s": 0.0,
                    "repetition": 0,
                    "run_order": index,
                    "status": "ok",
                    "started_utc": now,
                    "ended_utc": now,
                    "t0_ns": result.samples[0].t_start_ns if result.samples else None,
                    "broker_version": result.broker_version,
                    **{key: facts[key] for key in TLS_FACTS},
                    "details_json": {
                        "benchmark": "handshake",
                        "tls_profile": result.profile.to_dict(),
                        **summary,
                    },
                },
                {"handshakes": tables["handshakes"]},
                run_dir,
            )
    return results_dir
