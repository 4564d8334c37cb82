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
import dataclasses
import json
import math
import random
import ssl
import statistics
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt

from iotsecbench.agents.handshake import TimedClient, TlsHandshakeMeasurement
from iotsecbench.analysis.describe import t_half_width
from iotsecbench.analysis.iotst import classify_repetition
from iotsecbench.bench.iotst import (
    TraceTally,
    device_model,
    marker_cost_ns,
    scheduler_slice,
    traced,
)
from iotsecbench.bench.native import NativeClient, check_stack, measured_connection
from iotsecbench.errors import SpecError
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker, mosquitto_version
from iotsecbench.lab.cpu import CpuPlacement, CpuQuotas, cpus_kept_awake
from iotsecbench.lab.pki import create_certificates
from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.cpu import thread_cpu_ns
from iotsecbench.measure.host import host_facts, software_versions
from iotsecbench.measure.tracefs import EVENTS as TRACE_EVENTS
from iotsecbench.measure.tracefs import SchedTracer
from iotsecbench.security.tls import (
    HandshakeObserver,
    TlsProfile,
    client_context,
    parse_profile,
    verify_negotiated,
)
from iotsecbench.security.tls.observe import client_hello_record_bytes, client_hello_segments
from iotsecbench.security.tls.stacks import OPENSSL, PYTHON_STACKS, stack_environment
from iotsecbench.spec.bench import (
    DEFAULT_MAX_REPETITIONS,
    DEFAULT_REPETITIONS,
    DEFAULT_TIMEOUT_S,
    DEFAULT_TRACE_DEVICE,
)

FORMAT_VERSION = 1  # version 1: first format (one record per profile, raw samples included)
CONFIDENCE = 0.95
MIN_REPETITIONS = 5  # below this a t interval says little; --target-ci never stops earlier
CONNACK_TIMEOUT_S = DEFAULT_TIMEOUT_S
# What a profile's summary says it negotiated (its first connection's NegotiatedTls), for both
# methods (bench.device, counted on a device, too).
NEGOTIATED_SUMMARY = (
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


class HandshakeMismatch(RuntimeError):
    """A handshake negotiated something other than its profile asks for."""


class HandshakeFailed(RuntimeError):
    """A connection did not complete (a timeout on a slow link, a refused handshake)."""


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
        half = float(t_half_width(sd, n, level)) if n > 1 else math.inf
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
    local_port: int = 0  # the client's TCP port (to find its retransmissions in a trace)
    trace: dict[str, Any] | None = None  # --trace: analysis.iotst.TracedRepetition.to_dict()
    # --stack of the native agent: most heap its TLS stack held from creating the context to
    # the end of the handshake (its allocator hooks; docs/native-agents.md); None on OpenSSL
    tls_heap_peak_bytes: int | None = None

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
    """The measured connections of one profile on one CPU placement (``--cores``,
    ``--clock``); with ``--trace`` also their traces (``tally``) and the device model."""

    profile: TlsProfile
    samples: list[HandshakeSample] = field(default_factory=list)
    broker_version: str = ""
    placement: CpuPlacement = field(default_factory=CpuPlacement)
    tally: TraceTally | None = None
    marker_cost_ns: int = 0
    device_model: dict[str, Any] | None = None
    # How long the --clock quota held the client back over all repetitions (cgroup cpu.stat):
    # whether the emulated slower clock bit at all, which the wall time alone cannot tell.
    throttled_ns: int = 0

    @property
    def name(self) -> str:
        if self.placement == CpuPlacement():
            return self.profile.name
        return f"{self.profile.name} [{self.placement.label}]"

    def statistic(self, metric: str) -> Statistic:
        return Statistic.of([METRICS[metric](s) for s in self.samples])

    def invariant_statistic(self) -> Statistic:
        """The traced network-invariant CPU time (ns) of the kept repetitions."""
        traces = self.tally.traces if self.tally else []
        return Statistic.of([t.network_invariant_ns for t in traces])

    def converged(self, target: float) -> bool:
        if len(self.samples) < MIN_REPETITIONS:
            return False
        if self.tally is not None:  # the study's criterion: the network-invariant cost
            return self.invariant_statistic().relative_half_width < target
        return all(
            self.statistic(m).relative_half_width < target for m in ("tls_wall_ns", "tls_cpu_ns")
        )

    def _client_hello(self) -> dict[str, Any]:
        """The ClientHello's size on the wire and the TCP segments it needed (median MSS)."""
        if not self.samples:
            return {}
        mss = round(statistics.median([s.tls.tcp_mss or 0 for s in self.samples])) or None
        sent = self.samples[0].negotiated.get("handshake_messages_sent", [])
        return {
            "client_hello_bytes": client_hello_record_bytes(sent),
            "tcp_mss": mss,
            "client_hello_segments": client_hello_segments(sent, mss),
        }

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
        traced = (
            self.tally.summary(self.marker_cost_ns, scheduler_slice(), Statistic.of)
            if self.tally is not None
            else {}
        )
        return {
            "profile": self.name,
            "tls_profile_name": self.profile.name,
            "cores": self.placement.cores,
            "cpu_share": str(self.placement.share),
            "quota_throttled_s": self.throttled_ns / 1e9,
            **traced,
            **({"device_model": self.device_model} if self.device_model else {}),
            "repetitions": len(self.samples),
            "statistics": {m: asdict(self.statistic(m)) for m in METRICS},
            "negotiated": {k: first.get(k) for k in NEGOTIATED_SUMMARY},
            "median_wire": wire | self._client_hello(),
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

    profile: TlsProfile
    broker: MosquittoBroker
    context: ssl.SSLContext | None  # the Python client's (None: the native agent connects)
    observer: HandshakeObserver | None
    user: BrokerUser
    session: ssl.SSLSession | None = None
    connections: int = 0
    native: NativeClient | None = None  # --stack mbedtls|wolfssl: the native agent connects
    timeout_s: float = CONNACK_TIMEOUT_S  # per handshake, and again from it to CONNACK


def _connect_once(
    lab: _Lab, repetition: int = 0, mark: Callable[[str], None] | None = None
) -> HandshakeSample | None:
    """One connect → CONNACK → disconnect; returns the measurement (None for a warm-up).
    ``mark`` writes the trace markers of ``--trace`` (the last one, ``end``, at CONNACK)."""
    assert lab.broker.listener is not None
    if lab.native is not None:
        return _connect_native(lab, repetition, traced=mark is not None)
    assert lab.context is not None and lab.observer is not None
    profile = lab.profile
    offer = lab.session if profile.resumption else None
    client = TimedClient(
        handshake_timeout_s=lab.timeout_s,
        mark=mark,
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
    try:
        client.connect(lab.broker.listener.host, lab.broker.listener.port, keepalive=60)
    except (OSError, ssl.SSLError) as error:  # TimeoutError is an OSError
        raise HandshakeFailed(
            f"{profile.name}: the connection did not complete ({error or type(error).__name__}); "
            f"on a slow link raise --timeout (now {lab.timeout_s:g} s)"
        ) from None
    t_ready = now_ns()
    cpu_ready = thread_cpu_ns()
    deadline = t_ready + int(lab.timeout_s * 1e9)
    while not acknowledged and now_ns() < deadline:
        client.loop(timeout=1.0)
    t_connack, cpu_end = now_ns(), thread_cpu_ns()
    if mark is not None:
        mark("iotsb end")
    if not acknowledged or acknowledged[0].is_failure:
        raise HandshakeMismatch(f"{profile.name}: no CONNACK from the broker ({acknowledged})")
    sock = client.socket()
    local_port = sock.getsockname()[1] if sock is not None else 0
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
        repetition=repetition,
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
        local_port=local_port,
    )


def _connect_native(lab: _Lab, repetition: int, *, traced: bool = False) -> HandshakeSample:
    """The same connection made by the native agent (bench/native.py); ``traced``: the agent
    writes the trace markers itself."""
    assert lab.native is not None
    try:
        records = lab.native.connect(traced=traced)
        negotiated, phases, tls = measured_connection(records, lab.profile)
    except ValueError as error:
        raise HandshakeMismatch(f"{lab.profile.name}: {error}") from None
    tcp, mqtt_phase = phases["tcp_connect"], phases["mqtt_connect"]
    mqtt_cpu = int(mqtt_phase["detail"]["thread_cpu_ns"])
    return HandshakeSample(
        repetition=repetition,
        order=0,
        t_start_ns=tcp["t_start_ns"],
        tcp_connect_ns=tcp["wall_ns"],
        tcp_connect_cpu_ns=tcp["cpu_ns"],
        tls=tls,
        t_ready_ns=mqtt_phase["t_start_ns"],
        t_connack_ns=mqtt_phase["t_end_ns"],
        mqtt_connect_cpu_ns=mqtt_cpu,
        total_cpu_ns=tcp["cpu_ns"] + tls.thread_cpu_ns + mqtt_cpu,
        negotiated=negotiated,
        local_port=int(tcp["detail"].get("local_port", 0)),
        tls_heap_peak_bytes=phases["tls_handshake"]["detail"].get("tls_heap_peak_bytes"),
    )


ProgressCallback = Callable[[ProfileResult, int, int], None]  # result, done, planned


@dataclass
class TraceSettings:
    """What ``--trace`` adds (``bench.iotst``): the device to model, whether repetitions
    with a retransmission are kept (the study discards them)."""

    device: str | None = DEFAULT_TRACE_DEVICE
    keep_retransmissions: bool = False


@dataclass
class _Configuration:
    """One profile on one CPU placement: what a round visits."""

    lab: _Lab
    result: ProfileResult


def run_handshake_benchmark(
    profiles: Sequence[TlsProfile],
    work_dir: Path,
    *,
    repetitions: int | None = None,
    target_ci: float | None = None,
    max_repetitions: int = DEFAULT_MAX_REPETITIONS,
    warmup: int = 1,
    seed: int = 1,
    placements: Sequence[CpuPlacement] = (CpuPlacement(),),
    trace: TraceSettings | None = None,
    network: str = "loopback",
    stack: str = OPENSSL,
    on_progress: ProgressCallback | None = None,
    on_profile_done: Callable[[ProfileResult], None] | None = None,
    timeout_s: float = CONNACK_TIMEOUT_S,
) -> HandshakeBenchmark:
    """Measure every profile × placement against the profile's own embedded broker,
    interleaved (module docstring); with ``trace``, every repetition is traced and has an
    untraced partner (``bench.iotst``); with a ``network`` other than loopback the brokers
    run on the emulated network's broker host and the client on its emitter host."""
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
    check_stack(stack, profiles)
    network_profile(network)  # an unknown name (2) or no namespaces (3): before any broker
    work_dir = Path(work_dir)
    rng = random.Random(seed)
    version = mosquitto_version()
    device = _device_profile(trace)
    client_stack = stack
    with contextlib.ExitStack() as stack:
        lab_network = _network_lab(network, work_dir, stack)
        tracer = stack.enter_context(SchedTracer()) if trace is not None else None
        awake_problem = stack.enter_context(cpus_kept_awake()) if trace is not None else None
        quotas = stack.enter_context(CpuQuotas())
        configurations: list[_Configuration] = []
        for index, profile in enumerate(profiles):
            marker = tracer.path / "trace_marker" if tracer is not None else None
            lab = _start_lab(profile, index, work_dir, stack, lab_network, client_stack, marker)
            lab.timeout_s = timeout_s
            for placement in placements:
                result = ProfileResult(profile, broker_version=version, placement=placement)
                if tracer is not None:
                    result.tally = TraceTally()
                configurations.append(_Configuration(lab, result))

        def measure() -> None:
            for lab in {id(c.lab): c.lab for c in configurations}.values():
                for _ in range(warmup + (1 if lab.profile.resumption else 0)):
                    _connect_once(lab)  # a native agent starts here (in the namespace)
            if tracer is not None:  # each client's own marker writes: Python's or the agent's
                costs: dict[int, int] = {}  # once per writer: this thread, or each native agent
                for configuration in configurations:
                    native = configuration.lab.native
                    if id(native) not in costs:
                        costs[id(native)] = marker_cost_ns(tracer, native)
                    configuration.result.marker_cost_ns = costs[id(native)]
            order = 0
            active = list(configurations)
            while active:
                rng.shuffle(active)
                for configuration in list(active):
                    result = configuration.result
                    native = configuration.lab.native
                    share = result.placement.share
                    with quotas.placed(result.placement, native.pid if native else None):
                        before = quotas.throttled_ns(share)
                        kept = _repetition(configuration, tracer, trace, rng, order)
                        result.throttled_ns += quotas.throttled_ns(share) - before
                    order += 1
                    done = len(result.samples)
                    finished = done >= planned or (
                        target_ci is not None and result.converged(target_ci)
                    )
                    if not kept and order > 50 * planned * len(configurations):
                        raise HandshakeMismatch(
                            f"{result.name}: most repetitions had TCP retransmissions "
                            "(use --keep-retransmissions to keep them)"
                        )
                    if on_progress is not None:
                        on_progress(result, done, done if finished else planned)
                    if finished:
                        active.remove(configuration)
                        if on_profile_done is not None:
                            on_profile_done(result)

        if lab_network is None:
            measure()
        else:
            from iotsecbench.lab.network import in_namespace

            in_namespace(lab_network.namespaces["emitter"], measure)
    results = [c.result for c in configurations]
    if device is not None:
        for result in results:
            result.device_model = _modelled(result, device)
    settings: dict[str, Any] = {
        "repetitions": repetitions,
        "target_ci": target_ci,
        "max_repetitions": max_repetitions,
        "warmup": warmup,
        "seed": seed,
        "confidence": CONFIDENCE,
        "network": network,
        "stack": client_stack,
        "placements": [
            {"cores": p.cores, "cpu_share": str(p.share), "label": p.label} for p in placements
        ],
    }
    if trace is not None:
        settings["trace"] = {
            "device": trace.device,
            "keep_retransmissions": trace.keep_retransmissions,
            "tracefs_events": [f"{s}:{e}" for s, e in TRACE_EVENTS],
            "cpus_kept_awake": awake_problem or "yes (/dev/cpu_dma_latency = 0)",
        }
    return HandshakeBenchmark(results, environment(version), settings)


def _device_profile(trace: TraceSettings | None) -> Any:
    if trace is None or trace.device is None:
        return None
    from iotsecbench.energy.profile import load_profile

    return load_profile(trace.device)


def network_profile(network: str) -> Any:
    """The ``--network`` profile, or None on loopback; SpecError for an unknown name,
    NoPermissionError (exit 3) where namespaces cannot be made."""
    from iotsecbench.spec.hosts import LOOPBACK
    from iotsecbench.spec.network import resolve_profile

    try:
        profile = resolve_profile(network, {})
    except ValueError as error:
        raise SpecError(f"--network: {error}") from None
    if profile.kind == LOOPBACK:
        return None
    from iotsecbench.lab.network import require_support

    require_support([network])
    return profile


def _network_lab(network: str, work_dir: Path, stack: contextlib.ExitStack) -> Any:
    """The emulated network the benchmark runs on, or None on loopback."""
    from iotsecbench.lab.network import NetworkLab

    profile = network_profile(network)
    if profile is None:
        return None
    return stack.enter_context(NetworkLab(profile, "bench", work_dir / "network"))


def _start_lab(
    profile: TlsProfile,
    index: int,
    work_dir: Path,
    stack: contextlib.ExitStack,
    network: Any,
    client_stack: str = OPENSSL,
    trace_marker: Path | None = None,
) -> _Lab:
    certs = create_certificates(work_dir / "pki", profile.certificate, profile.chain_length)
    user = BrokerUser.random("bench", read=[], write=[])
    # On an emulated network: one broker per profile on the broker host, one port each.
    placement = network.broker_options(8883 + index) if network is not None else {}
    broker = MosquittoBroker.with_tls(
        work_dir / "brokers" / f"{index:02d}",
        [user],
        profile,
        certs,
        environment=stack_environment(client_stack),
        **placement,
    )
    stack.enter_context(broker)
    if client_stack in PYTHON_STACKS:  # openssl-3.5: this process runs on it (cli re-exec)
        context = client_context(
            profile,
            certs.ca_file,
            certs.client_cert if profile.mutual else None,
            certs.client_key if profile.mutual else None,
        )
        observer = HandshakeObserver()
        observer.install(context)
        return _Lab(profile, broker, context, observer, user)
    # the native agent connects (this process's OpenSSL may lack the profile's group)
    client = NativeClient(
        client_stack,
        profile,
        broker,
        user,
        certs.ca_file,
        work_dir / "native" / f"{index:02d}",
        (certs.client_cert, certs.client_key) if profile.mutual else None,
        trace_marker,
    )
    stack.callback(client.close)
    return _Lab(profile, broker, None, None, user, native=client)


def _repetition(
    configuration: _Configuration,
    tracer: SchedTracer | None,
    trace: TraceSettings | None,
    rng: random.Random,
    order: int,
) -> bool:
    """One measured repetition (traced, with its untraced partner, under ``--trace``);
    False when it was discarded for a retransmission."""
    lab, result = configuration.lab, configuration.result
    repetition = len(result.samples)
    if tracer is None or trace is None or result.tally is None:
        sample = _connect_once(lab, repetition)
        assert sample is not None
        result.samples.append(dataclasses.replace(sample, order=order))
        return True
    tally = result.tally
    traced_first = rng.random() < 0.5
    if not traced_first:
        tally.untraced_cpu_ns.append(_untraced_cpu(lab, repetition))
    with traced(tracer):
        sample = _connect_once(lab, repetition, mark=tracer.mark)
    assert sample is not None
    classified = classify_repetition(
        tracer.events(),
        lab.native.pid if lab.native is not None else threading.get_native_id(),
        version=lab.profile.version,
        cpus=tracer.cpus,
        local_port=sample.local_port,
        marker_cost_ns=result.marker_cost_ns,
    )
    if traced_first:
        tally.untraced_cpu_ns.append(_untraced_cpu(lab, repetition))
    retransmitted = classified.retransmissions > 0 or bool(sample.tls.tcp_retransmissions)
    if retransmitted and not trace.keep_retransmissions:
        tally.retransmission_runs_discarded += 1
        return False
    tally.retransmission_runs_kept += int(retransmitted)
    tally.traces.append(classified)
    tally.traced_cpu_ns.append(sample.total_cpu_ns)
    result.samples.append(dataclasses.replace(sample, order=order, trace=classified.to_dict()))
    return True


def _untraced_cpu(lab: _Lab, repetition: int) -> int:
    """The untraced partner's connection CPU time (the overhead's reference)."""
    sample = _connect_once(lab, repetition)
    assert sample is not None
    return sample.total_cpu_ns


def _modelled(result: ProfileResult, device: Any) -> dict[str, Any] | None:
    """The device model of the profile's handshake (from its first negotiated parameters)."""
    if not result.samples:
        return None
    from iotsecbench.security.tls import NegotiatedTls, handshake_operations

    raw = dict(result.samples[0].negotiated)
    fields = {f.name for f in dataclasses.fields(NegotiatedTls)}
    negotiated = NegotiatedTls(**{k: v for k, v in raw.items() if k in fields})
    operations = handshake_operations(negotiated, result.profile.certificate)
    handshake_bytes = int(raw.get("handshake_bytes_sent") or 0) + int(
        raw.get("handshake_bytes_received") or 0
    )
    operations.append(("sha256", handshake_bytes))  # the transcript hash over every message
    return device_model(operations, device)
