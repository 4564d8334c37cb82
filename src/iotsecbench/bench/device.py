"""``bench handshake --target rv32imc|cortex-m4``: every handshake made by the device's own
client, bare metal on the virtual MCU, against the lab's real broker, and counted to the
instruction in the ``iotst`` groups (docs/device-client.md, docs/iotst.md).

Method:

* per profile and repetition, a fresh broker whose OpenSSL draws its random numbers from the
  repetition's seed (``lab.seeded_rand``), and the device client seeded with the same seed
  (its TRNG stand-in): one seed, one pair of peers, one instruction count;
* the client runs under QEMU (``runner.device``), its UART bridged to the broker on the
  emulated network's emitter host when ``--network`` is set; configurations are interleaved in
  a seeded order, as in the traced method;
* each connection's segments become groups (``runner.counted``, ``analysis.counted``); what
  was negotiated is read from the wire and checked against the profile (a mismatch ends the
  benchmark, exit 2);
* per profile: instructions per group and in total, without and with the network wait (mean,
  95 % interval, min–max over seeds), the primitives' share, stack and heap, flash and RAM of
  the image, bytes and segments on the wire, and the device time at the profile's clocks from
  the counts (cycles = instructions × the profile's CPI, with its source): ``device_model``,
  the block the traced method writes, labelled *counted*.
"""

from __future__ import annotations

import contextlib
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotsecbench.analysis.counted import FAMILIES, replay
from iotsecbench.bench.handshake import (
    DEFAULT_REPETITIONS,
    MIN_REPETITIONS,
    NEGOTIATED_SUMMARY,
    HandshakeFailed,
    HandshakeMismatch,
    Statistic,
    _network_lab,
    environment,
    network_profile,
)
from iotsecbench.bench.iotst import ci_widths
from iotsecbench.energy.uncertainty import MODEL_LEVEL, central_range, draw_profile
from iotsecbench.errors import SpecError
from iotsecbench.lab import seeded_rand
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker, mosquitto_version
from iotsecbench.lab.pki import create_certificates
from iotsecbench.runner.counted import CountedConnection, CountedMismatch, counted_connection
from iotsecbench.runner.device import DEFAULT_TIMEOUT_S, run_device
from iotsecbench.security.tls import TlsProfile, broker_openssl_config, mosquitto_listener_lines
from iotsecbench.security.tls.stacks import OPENSSL_PQ, group_ids, stack_environment, suite_ids
from iotsecbench.security.tls.wire import WireError
from iotsecbench.vmcu import target, target_facts
from iotsecbench.vmcu.client import (
    PLAIN,
    DeviceFirmware,
    build_of,
    device_firmware,
    require_device,
)
from iotsecbench.vmcu.device import DeviceConfig, seed_for

STUDY_CLOCKS_MHZ = (80, 160, 240)  # the iotst study's ESP32 clocks, where the device reaches them
COUNTED = "counted"


@dataclass
class CountedSample:
    """One counted connection."""

    repetition: int
    order: int
    seed_hex: str
    connection: CountedConnection

    def to_dict(self) -> dict[str, Any]:
        c = self.connection
        return {
            "repetition": self.repetition,
            "order": self.order,
            "seed_hex": self.seed_hex,
            **c.counted.to_dict(),
            "negotiated": c.negotiated,
            "counters": c.counters,
            "t_start_ns": c.t_start_ns,
            "tcp_connect_ns": c.tcp_connect_ns,
            "t_connack_ns": c.t_connack_ns,
            "wall_ns": c.wall_ns,
            "tcp": c.tcp,
            "residue": c.residue,
            "qemu_wall_ns": c.qemu_wall_ns,
            "emulated_instructions": c.emulated_instructions,
        }


def _stat(values: Sequence[float]) -> dict[str, Any]:
    """Mean, SD, 95 % interval, min and max (the spread over seeds)."""
    s = Statistic.of(values)
    return {
        "mean": s.mean, "sd": s.sd, "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n,
        "level": s.level, "min": min(values) if values else None,
        "max": max(values) if values else None,
    }  # fmt: skip


@dataclass
class CountedResult:
    """One profile's counted connections on one target and stack."""

    profile: TlsProfile | None
    target: str
    stack: str
    firmware: DeviceFirmware
    plain_firmware: DeviceFirmware
    device: Any  # energy.profile.DeviceProfile: the clock and CPI
    samples: list[CountedSample] = field(default_factory=list)
    broker_version: str = ""

    @property
    def name(self) -> str:
        return self.profile.name if self.profile is not None else PLAIN

    @property
    def method(self) -> str:
        return f"counted on {self.target}"

    def invariant_statistic(self) -> Statistic:
        return Statistic.of([s.connection.counted.invariant_instructions for s in self.samples])

    def converged(self, target_ci: float) -> bool:
        return (
            len(self.samples) >= MIN_REPETITIONS
            and self.invariant_statistic().relative_half_width < target_ci
        )

    def _groups(self) -> dict[str, Any]:
        """Per group: mean instructions of each bucket and family, and the client's spread."""
        names: list[str] = []
        for sample in self.samples:
            names += [n for n in sample.connection.counted.groups if n not in names]
        groups = {}
        for name in names:
            found = [s.connection.counted.groups.get(name) for s in self.samples]
            present = [g for g in found if g is not None]

            def mean(values: list[float]) -> float:
                return statistics.fmean(values) if values else 0.0

            groups[name] = {
                "client": _stat([g.client if g else 0 for g in found]),
                "wait": mean([g.wait for g in present]),
                "io": mean([g.io for g in present]),
                "primitives": {
                    f: mean([g.primitives.get(f, 0) for g in present])
                    for f in FAMILIES
                    if any(f in g.primitives for g in present)
                },
            }
        return groups

    def _instructions_per_s(self, mhz: float) -> float:
        cpi_parameter = self.device.parameters.get("cpi")
        return mhz * 1e6 / (cpi_parameter.value if cpi_parameter is not None else 1.0)

    def device_time(self) -> dict[str, Any]:
        """The handshake's device seconds at the profile's own clock, per repetition: the
        counted network-invariant instructions, and the replay with the measured network (the
        iotst views' counted series)."""
        mhz = self.device.cpu_clock_hz / 1e6
        rate = self._instructions_per_s(mhz)
        return {
            "clock_mhz": mhz,
            "network_invariant_s": _stat(
                [s.connection.counted.invariant_instructions / rate for s in self.samples]
            ),
            "with_network_wait_s": _stat(
                [replay(s.connection.segments, s.connection.arrivals, rate) for s in self.samples]
            ),
        }

    def cpi_range(self) -> tuple[float, float, str]:
        """The CPI's central 90 % over draws of the profile (``energy.uncertainty``: PERT over
        its stated range) and how it was drawn; a profile without a CPI takes 1."""
        if self.device.parameters.get("cpi") is None:
            return 1.0, 1.0, "no CPI in the profile: 1 assumed, no range"
        drawn = draw_profile(self.device)
        low, high = central_range(drawn["cpi"])
        return low, high, f"the CPI's 90 % range {low:.3g}–{high:.3g} ({drawn.method})"

    def device_model(self) -> dict[str, Any]:
        """Device seconds from the counts at the profile's clocks (the traced method's block,
        labelled counted): cycles = instructions × CPI; with the network: the segments
        replayed against the bridge's measured arrivals (``analysis.counted.replay``). Every
        figure rises with the CPI, so its 90 % range is the figure at the CPI's 90 % range's
        ends: counted instructions, a CPI with the profile's uncertainty."""
        cpi_parameter = self.device.parameters.get("cpi")
        cpi = cpi_parameter.value if cpi_parameter is not None else 1.0
        cpi_low, cpi_high, cpi_method = self.cpi_range()
        clock_mhz = self.device.cpu_clock_hz / 1e6
        clocks = sorted({*(c for c in STUDY_CLOCKS_MHZ if c <= clock_mhz), clock_mhz})
        invariant = [s.connection.counted.invariant_instructions for s in self.samples]
        primitives = {
            f: statistics.fmean([s.connection.counted.primitives().get(f, 0) for s in self.samples])
            for f in FAMILIES
        }

        def with_network_s(instructions_per_s: float) -> float | None:
            seconds = [
                replay(s.connection.segments, s.connection.arrivals, instructions_per_s)
                for s in self.samples
            ]
            return statistics.fmean(seconds) if seconds else None

        table: dict[str, Any] = {}
        for mhz in clocks:
            hz = self._instructions_per_s(mhz)
            seconds = statistics.fmean(invariant) / hz if invariant else float("nan")
            slow, fast = mhz * 1e6 / cpi_high, mhz * 1e6 / cpi_low  # instructions per second
            table[f"{mhz:g}MHz x1"] = {
                "seconds": seconds,
                "clock_scaled_s": seconds,
                "fixed_s": 0.0,
                "with_network_s": with_network_s(hz),
                "primitives_s": {f: v / hz for f, v in primitives.items() if v},
                "clock_mhz": mhz,
                "cores": 1,
                "cpi_range": {
                    "low": seconds * cpi_low / cpi,
                    "high": seconds * cpi_high / cpi,
                    "level": MODEL_LEVEL,
                    "method": cpi_method,
                },
                "with_network_cpi_range": [with_network_s(fast), with_network_s(slow)],
            }
        return {
            "label": f"counted on {self.target} ({self.device.name}: CPI {cpi:g}, "
            f"{cpi_parameter.status if cpi_parameter else 'default'})",
            "method": COUNTED,
            "device": self.device.name,
            "reference_clock_mhz": clock_mhz,
            "cpi": cpi,
            "cpi_source": cpi_parameter.source if cpi_parameter is not None else "none: 1.0",
            "cpi_status": cpi_parameter.status if cpi_parameter is not None else "guess",
            "instructions_mean": statistics.fmean(invariant) if invariant else None,
            "primitives_instructions_mean": primitives,
            "operations": [],
            "unpriced_operations": [],
            "assumptions": [
                "cycles = instructions x CPI: QEMU counts instructions, not cycles (no pipeline, "
                "cache or flash wait states)",
                "software only: an accelerator would run the primitives' share "
                "(primitives_s) at its own cost",
                "one handshake runs in one task: a second core does not shorten it",
                "with_network_s replays the counted segments against the bridge's measured "
                "arrival times: counted computing, measured network",
            ],
            "by_clock_and_cores": table,
        }

    def summary(self) -> dict[str, Any]:
        samples = self.samples
        counted = [s.connection.counted for s in samples]
        connections = [s.connection for s in samples]

        def metric(values: list[float]) -> dict[str, Any]:
            return _stat(values)

        counters = [c.counters for c in connections]

        def peak(name: str) -> int | None:
            values = [c[name] for c in counters if name in c]
            return max(values) if values else None

        tcp_keys = ("tcp_bytes_sent", "tcp_bytes_received", "tcp_segments_out",
                    "tcp_segments_in")  # fmt: skip
        first = connections[0].negotiated if connections and connections[0].negotiated else {}
        residue = connections[0].residue if connections else {}
        boundaries = statistics.fmean([c.boundaries for c in counted]) if counted else 0
        calls = statistics.fmean([c.primitive_calls for c in counted]) if counted else 0
        residue_total = boundaries * residue.get("per_boundary", 0) + calls * residue.get(
            "per_primitive_call", 0
        )
        invariant = [c.invariant_instructions for c in counted]
        firmware = self.firmware
        groups = self._groups()
        return {
            "profile": self.name,
            "tls_profile_name": self.name,
            "method": self.method,
            "target": self.target,
            "stack": self.stack,
            "repetitions": len(samples),
            "seeds": [s.seed_hex for s in samples],
            "instructions": {
                "network_invariant": metric(invariant),
                "with_network_wait": metric([c.with_network_wait_instructions for c in counted]),
                "network_wait": metric([c.wait_instructions for c in counted]),
                "uart_io": metric([c.io_instructions for c in counted]),
                "setup": metric([c.setup.client for c in counted]),
            },
            "groups": groups,
            "group_order": list(groups),  # handshake order (JSON objects lose it)
            "primitives": {
                f: statistics.fmean([c.primitives().get(f, 0) for c in counted]) if counted else 0
                for f in FAMILIES
            },
            "bookkeeping_residue": {
                **residue,
                "boundaries_mean": boundaries,
                "primitive_calls_mean": calls,
                "instructions_mean": residue_total,
                "share": residue_total / statistics.fmean(invariant) if invariant else None,
            },
            "memory": {
                "stack_high_water_bytes": peak("stack_high_water_bytes"),
                "heap_handshake_peak_bytes": peak("tls_heap_handshake_peak_bytes"),
                "heap_setup_peak_bytes": peak("tls_heap_setup_peak_bytes"),
                "heap_steady_bytes": peak("tls_heap_steady_bytes"),
            },
            "firmware": {
                "build": firmware.build,
                "build_hash": firmware.build_hash,
                "provenance": firmware.provenance,
                "text_bytes": firmware.text_bytes,
                "data_bytes": firmware.data_bytes,
                "bss_bytes": firmware.bss_bytes,
                "flash_bytes": firmware.flash_bytes,
                "static_ram_bytes": firmware.static_ram_bytes,
                "tls_stack_text_bytes": firmware.text_bytes - self.plain_firmware.text_bytes,
                "tls_stack_data_bytes": firmware.data_bytes - self.plain_firmware.data_bytes,
                "tls_stack_bss_bytes": firmware.bss_bytes - self.plain_firmware.bss_bytes,
            },
            "wire": {
                **{
                    key: statistics.median([c.tcp.get(key, 0) for c in connections])
                    for key in tcp_keys
                },
                "tcp_retransmissions": sum(
                    c.tcp.get("tcp_retransmissions", 0) for c in connections
                ),
                "stream_bytes_sent": peak("stream_bytes_sent"),
                "stream_bytes_received": peak("stream_bytes_received"),
            },
            "connect_wall_s": metric([c.wall_ns / 1e9 for c in connections]),
            "emulation": {
                "instructions_per_s": metric([c.instructions_per_s for c in connections]),
                "qemu_wall_s": metric([c.qemu_wall_ns / 1e9 for c in connections]),
            },
            "tcp_connect_s": metric([c.tcp_connect_ns / 1e9 for c in connections]),
            "negotiated": {k: first.get(k) for k in NEGOTIATED_SUMMARY},
            "ci_half_width_by_repetitions": ci_widths(invariant, Statistic.of),
            "device_time_s": self.device_time(),
            "device_model": self.device_model(),
        }


@dataclass
class CountedBenchmark:
    """Every profile's counted result plus the environment (``--json``)."""

    results: list[CountedResult]
    environment: dict[str, Any]
    settings: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "iotsecbench-bench-handshake",
            "method": COUNTED,
            "environment": self.environment,
            "settings": self.settings,
            "profiles": [
                {
                    **r.summary(),
                    "tls_profile": r.profile.to_dict() if r.profile is not None else None,
                    "samples": [s.to_dict() for s in r.samples],
                }
                for r in self.results
            ],
        }


def check_counted(
    profiles: Sequence[TlsProfile | None], target_name: str, stack: str
) -> tuple[Any, dict[str, DeviceFirmware]]:
    """Everything refused before a broker starts: a profile the device build cannot do
    (exit 2); a missing toolchain, QEMU, OpenSSL 3.5 for post-quantum profiles or the seeded
    generator (exit 3). Builds the images (cached) and returns the target and them."""
    chosen = target(target_name)
    require_device(stack, list(profiles))
    target_facts(chosen)  # exit 3 naming the packages when the toolchain or QEMU is missing
    if any(p is not None and p.needs_pq_library for p in profiles):
        from iotsecbench.security import pq_openssl

        pq_openssl.require()
    seeded_rand.module()
    builds = {build_of(stack, p) for p in profiles} | {"plain"}
    return chosen, {name: device_firmware(chosen, name) for name in sorted(builds)}


@dataclass
class _Peer:
    """One profile's broker side: certificates and an account (a broker per repetition)."""

    profile: TlsProfile | None
    certificates: Any
    user: BrokerUser
    index: int


def _broker(peer: _Peer, seed: bytes, directory: Path, network: Any) -> MosquittoBroker:
    profile = peer.profile
    placement = network.broker_options(8883 + peer.index) if network is not None else {}
    base = broker_openssl_config(profile) if profile is not None else None
    lines = None
    if profile is not None:
        certs = peer.certificates
        lines = mosquitto_listener_lines(
            profile, certs.ca_file, certs.server_cert, certs.server_key
        )
    environment = (
        stack_environment(OPENSSL_PQ) if profile is not None and profile.needs_pq_library else None
    )
    return MosquittoBroker(
        directory,
        [peer.user],
        tls_lines=lines,
        openssl_config=seeded_rand.openssl_config(seed, base),
        environment=environment,
        **placement,
    )


def _config(peer: _Peer, seed: bytes) -> DeviceConfig:
    profile = peer.profile
    if profile is None:
        return DeviceConfig(seed, "iotsb-device", peer.user.name, peer.user.password)
    certs = peer.certificates
    mutual = (certs.client_cert.read_bytes(), certs.client_key.read_bytes())
    return DeviceConfig(
        seed,
        "iotsb-device",
        peer.user.name,
        peer.user.password,
        tls_version=profile.version,
        suites=tuple(suite_ids(profile)),
        groups=tuple(group_ids(profile)),
        ca_pem=certs.ca_file.read_bytes(),
        client_cert_pem=mutual[0] if profile.mutual else None,
        client_key_pem=mutual[1] if profile.mutual else None,
    )


ProgressCallback = Callable[[CountedResult, int, int], None]


def run_counted_benchmark(
    profiles: Sequence[TlsProfile | None],
    work_dir: Path,
    *,
    target_name: str,
    stack: str,
    repetitions: int | None = None,
    target_ci: float | None = None,
    max_repetitions: int = 200,
    seed: int = 1,
    network: str = "loopback",
    device: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_progress: ProgressCallback | None = None,
) -> CountedBenchmark:
    """Count every profile's handshake on the device (module docstring)."""
    from iotsecbench.energy.profile import load_profile

    if repetitions is not None and target_ci is not None:
        raise SpecError("give --reps or --target-ci, not both")
    planned = repetitions or (max_repetitions if target_ci is not None else DEFAULT_REPETITIONS)
    if planned < 1:
        raise SpecError("at least one repetition is needed")
    network_profile(network)  # an unknown name (2) or no namespaces (3): before any build
    device_profile = load_profile(device or target(target_name).profile)
    chosen, images = check_counted(profiles, target_name, stack)
    work_dir = Path(work_dir)
    version = mosquitto_version()
    rng = random.Random(seed)
    results, peers = [], []
    for index, profile in enumerate(profiles):
        certs = None
        if profile is not None:  # one PKI per directory: a rerun in it meets the same chain
            certs = create_certificates(work_dir / "pki", profile.certificate, profile.chain_length)
        peers.append(_Peer(profile, certs, BrokerUser.random("device", read=[], write=[]), index))
        results.append(
            CountedResult(profile, chosen.name, stack, images[build_of(stack, profile)],
                          images["plain"], device_profile, broker_version=version)
        )  # fmt: skip
    with contextlib.ExitStack() as stack_:
        lab_network = _network_lab(network, work_dir, stack_)

        def measure() -> None:
            order = 0
            active = list(zip(peers, results, strict=True))
            while active:
                rng.shuffle(active)
                for peer, result in list(active):
                    repetition = len(result.samples)
                    repetition_seed = seed_for(seed, repetition)
                    place = work_dir / "runs" / f"{peer.index:02d}" / f"{repetition:04d}"
                    connection = _connect(peer, result, repetition_seed, place, lab_network,
                                          timeout_s)  # fmt: skip
                    result.samples.append(
                        CountedSample(repetition, order, repetition_seed.hex(), connection)
                    )
                    order += 1
                    done = len(result.samples)
                    finished = done >= planned or (
                        target_ci is not None and result.converged(target_ci)
                    )
                    if on_progress is not None:
                        on_progress(result, done, done if finished else planned)
                    if finished:
                        active.remove((peer, result))

        if lab_network is None:
            measure()
        else:
            from iotsecbench.lab.network import in_namespace

            in_namespace(lab_network.namespaces["emitter"], measure)
    settings = {
        "method": COUNTED,
        "target": target_facts(chosen),
        "stack": stack,
        "repetitions": repetitions,
        "target_ci": target_ci,
        "max_repetitions": max_repetitions,
        "seed": seed,
        "network": network,
        "device": device_profile.name,
        "timeout_s": timeout_s,
        "server_randomness": "seeded per repetition (lab/seeded_rand.c)",
    }
    return CountedBenchmark(results, environment(version), settings)


def _connect(
    peer: _Peer, result: CountedResult, seed: bytes, place: Path, network: Any, timeout_s: float
) -> CountedConnection:
    """One repetition: a seeded broker, the device's connection, its count."""
    with _broker(peer, seed, place / "broker", network) as broker:
        assert broker.listener is not None
        address = (broker.listener.host, broker.listener.port)
        run = run_device(result.firmware, _config(peer, seed), address, place / "device",
                         timeout_s=timeout_s)  # fmt: skip
    if run.problem is not None:
        raise HandshakeFailed(f"{result.name} on {result.target}: {run.problem}")
    try:
        return counted_connection(run, peer.profile)
    except CountedMismatch as error:
        raise HandshakeMismatch(str(error)) from None
    except WireError as error:
        raise HandshakeFailed(f"{result.name} on {result.target}: {error}") from None
