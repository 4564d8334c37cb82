"""The metric registry: every metric iotsecbench derives, declared once.

An entry says what a number is (its key in ``analysis.json``, ``findings.json`` and
``comparison.json``, whose it is, its name in a sentence, unit and kind — *measured* on this
host, *modelled* by the device energy model or *counted* on a virtual microcontroller), how
it is shown (digits, short title, summary group), where it comes from (runs columns that
``collect`` stored, or a derivation of ``analysis.per_run``) and how it is compared (which
way is better; a finding from the analysis' comparison within runs or from a bootstrap over
runs; compared between experiments). The per-run frame, the summary table, the terminal's
groups, the findings, ``report A B``'s contrasts and every export read it (after pyperf's
``_metadata.METADATA``): adding a metric stored per run is one entry here.

The registry lives in ``analysis`` because analysis derives these numbers and both analysis
and the report (which may import analysis) read it; it imports nothing of the project.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

MEASURED = "measured"  # on this host
MODELLED = "modelled"  # the device energy model (docs/energy-model.md)
COUNTED = "counted"  # instructions counted on a virtual microcontroller (docs/virtual-mcu.md)
KINDS = (MEASURED, MODELLED, COUNTED)

# The metrics the analysis pipeline computes from the stored series (analysis.json's
# comparisons, descriptive rows and Pareto objectives); also the names of the current and
# latency frames' value columns (store.read.current_frame, latency_frame).
CURRENT = "current_ma"  # device current over each 10 Hz sample window
CHARGE = "energy_mah"  # cumulative charge per run
LATENCY = "latency_ms"  # one-way latency of a message

# Metrics the report draws a figure of, by name (each an entry below).
WIRE_BYTES = "wire_bytes_per_message"  # bytes on the wire per message against payload
THROUGHPUT = "throughput_kib_s"  # against block size (the block-sizes study)
ENERGY_PER_BYTE = "energy_per_byte_emitter_uj"  # against block size
# ... and, counted on a virtual MCU (run --target over tcp), the emitter's instructions per byte
INSTRUCTIONS_PER_BYTE = "instructions_per_byte_emitter"
SETUP_BYTES_OUT, SETUP_BYTES_IN = "setup_bytes_out", "setup_bytes_in"  # per link (the pq study)

# The phases of a session's set-up, in the order they happen (docs/methods.md), and the
# metric of each: the emitter's wall time in it.
PHASES = ("tcp_connect", "tls_handshake", "mqtt_connect", "key_exchange")
PHASE_COLUMNS = tuple(f"{phase}_ms" for phase in PHASES)

# How a finding (and ``report A B``) obtains a metric's interval.
SERIES = "series"  # the analysis' comparison within runs (block bootstrap, analysis.json)
OVER_RUNS = "runs"  # one value per run, i.i.d. bootstrap over runs (analysis.over_runs)

# How the summary aggregates a metric per configuration.
MEAN = "mean"  # the mean of the per-run values
POOLED = "pooled"  # over every message or run of the configuration at once (analysis.per_run)


@dataclass(frozen=True)
class Group:
    key: str
    title: str  # the terminal summary table's title: says measured or modelled
    # Its title when the emitter was the device client on a virtual MCU (`run --target`) and
    # some of the group's emitter figures are the firmware's counts ("{target}" filled in).
    counted_title: str = ""

    def title_for(self, target: str | None) -> str:
        """The title that says how this experiment's figures were taken."""
        return (
            self.counted_title.format(target=target)
            if target and self.counted_title
            else (self.title)
        )


# The terminal summary's tables, in the order they are printed.
GROUPS = (
    Group("handshake", "Handshake and latency (measured on this host)"),
    Group(
        "setup",
        "Session set-up on the wire (measured on this host: TLS handshake bytes from TCP_INFO "
        "plus the payload key exchange's messages; ClientHello in MSS-sized segments)",
    ),
    Group(
        "message",
        "Cost per message (measured on this host)",
        "Cost per message (the emitter's CPU and seal counted on {target}: instructions x CPI "
        "/ clock; the receiver's, bytes, rate and memory measured on this host — a saturating "
        "device emitter's rate is the emulator's, not the device's)",
    ),
    Group(
        "per-byte",
        "Per payload byte (block-sizes; energy modelled, the rest measured on this host)",
        "Per payload byte (the emitter's instructions, CPU and energy counted on {target}; the "
        "receiver's energy modelled; throughput and round trips measured on this host — a "
        "saturating device emitter's throughput is the emulator's, not the device's)",
    ),
    Group(
        "stack",
        "The client's stack (measured on this host with each row's stack, for its TLS and "
        "payload scheme: heap through its allocator hooks, footprint = size of its x86-64 "
        "program; docs/native-agents.md)",
        "The device client's firmware (counted on {target}: heap peaks on its counting heap, "
        "flash and static RAM of its image; docs/device-client.md)",
    ),
    Group(
        "fleet",
        "Fleet (measured on this host: the devices on one broker, started at once or ramped; "
        "set-up and latency percentiles across every device; the other tables show device 0; "
        "docs/scale.md)",
    ),
    Group(
        "broker",
        "Broker (measured on this host: mosquitto's mean CPU and peak memory; docs/scale.md)",
    ),
    Group(
        "energy",
        "Device energy (modelled; see docs/energy-model.md)",
        "Device energy (the emitter's counted on {target}: its instructions x CPI into the "
        "device model; the receiver's modelled; docs/device-client.md)",
    ),
)
FLEET = "fleet"  # a fleet's own figures: of one device they repeat the others, left empty

ROLES = ("emitter", "receiver", "broker")  # whose a metric is, when it is one party's


@dataclass(frozen=True)
class Metric:
    """One metric of one party: a column of the per-run frame and of the summary."""

    column: str  # per-run and summary column, table and CSV key: unique in the registry
    key: str  # the metric as analysis.json, findings.json and comparison.json name it
    role: str  # whose: "emitter" | "receiver" | "broker" | "end-to-end" | "" (the run's)
    name: str  # as a sentence says it, after the role: "the emitter's modelled current"
    unit: str
    kind: str  # MEASURED | MODELLED | COUNTED, or a phrase: "measured with ppk2"
    digits: int  # decimals in the terminal summary
    title: str  # short heading of the summary tables
    group: str = ""  # key of GROUPS ("": in no terminal table)
    sources: tuple[str, ...] = ()  # runs columns collect stored, summed per run (× scale)
    scale: float = 1.0
    lower_is_better: bool | None = True  # None: neither way is better (a count, a size)
    summary: str | None = MEAN  # MEAN | POOLED | None (per run only)
    finding: str = ""  # "" | SERIES | OVER_RUNS: a headline finding against the baseline
    across_experiments: bool = False  # compared between experiments (report A B) too
    follows_current: bool = False  # device current: modelled, or a meter's (report --current)
    # The emitter's value is the firmware's counts when the emitter was the device client on a
    # virtual MCU (`run --target`): then it says "counted on <target>" (Registry.counted_on).
    from_counts: bool = False

    def __post_init__(self) -> None:
        if self.kind.split(" ")[0] not in KINDS:
            raise ValueError(f"metric {self.column}: kind {self.kind!r} is not one of {KINDS}")
        if self.group and self.group not in {g.key for g in GROUPS}:
            raise ValueError(f"metric {self.column}: unknown group {self.group!r}")
        if self.finding not in ("", SERIES, OVER_RUNS):
            raise ValueError(f"metric {self.column}: finding {self.finding!r}")
        if self.summary not in (MEAN, POOLED, None):
            raise ValueError(f"metric {self.column}: summary {self.summary!r}")

    @property
    def described(self) -> str:
        """ "modelled current"; "current measured with ppk2" (a phrase reads after the name)."""
        return f"{self.kind} {self.name}" if " " not in self.kind else f"{self.name} {self.kind}"

    def heading(self) -> str:
        """Column or row heading: "modelled current (mA)"."""
        return f"{self.described} ({self.unit})" if self.unit else self.described

    def role_heading(self) -> str:
        """ "emitter modelled current (mA)"; an end-to-end or run-wide metric needs no role."""
        return f"{self.role} {self.heading()}" if self.role in ROLES else self.heading()

    @property
    def direction(self) -> str | None:
        """ "min" or "max": the way a Pareto objective of this metric is better."""
        if self.lower_is_better is None:
            return None
        return "min" if self.lower_is_better else "max"

    def with_current(self, current: str) -> Metric:
        """This metric as the report's device current makes it: a current or charge is
        ``current`` (MODELLED, or "measured with <meter>"), every other metric unchanged."""
        return dataclasses.replace(self, kind=current) if self.follows_current else self

    def labels(self, current: str = MODELLED) -> dict[str, str]:
        """The fields naming what a finding or contrast is about: metric, role, kind, unit."""
        return {
            "metric": self.key,
            "role": self.role,
            "kind": self.with_current(current).kind,
            "unit": self.unit,
        }


def _per_role(template: Metric, columns: dict[str, str]) -> tuple[Metric, ...]:
    """One metric of each role, with its own column: "current emitter", "current receiver"."""
    return tuple(
        dataclasses.replace(template, role=role, column=column, title=f"{template.title} {role}")
        for role, column in columns.items()
    )


_CURRENT = Metric(
    "", CURRENT, "", "current", "mA", MODELLED, 2, "current", "energy",
    finding=SERIES, follows_current=True, from_counts=True,
)  # fmt: skip
_CHARGE = Metric(
    "", CHARGE, "", "charge", "mAh", MODELLED, 4, "charge", "energy",
    finding=SERIES, follows_current=True, from_counts=True,
)  # fmt: skip
_CPU_PER_MESSAGE = Metric(
    "", "cpu_us_per_message", "", "CPU time per message", "µs", MEASURED, 0, "CPU/msg", "message",
    finding=OVER_RUNS, from_counts=True,
)  # fmt: skip


class Registry(Sequence[Metric]):
    """The metrics in the order the summary shows them; looked up by column or by key."""

    def __init__(self, metrics: Iterable[Metric]) -> None:
        self._metrics = tuple(metrics)
        self._by_column = {m.column: m for m in self._metrics}
        if len(self._by_column) != len(self._metrics):
            raise ValueError("two metrics share a column")
        self._by_key: dict[str, Metric] = {}
        for entry in self._metrics:
            first = self._by_key.setdefault(entry.key, entry)
            # a device emitter's counted figure beside the host receiver's is the one way
            # two roles of a metric may be taken differently
            counted = first.from_counts or entry.from_counts
            if (first.name, first.unit) != (entry.name, entry.unit) or (
                first.kind != entry.kind and not counted
            ):
                raise ValueError(f"metric {entry.key}: its roles disagree on name, unit or kind")

    def __getitem__(self, index):  # type: ignore[override]
        return self._metrics[index]

    def __len__(self) -> int:
        return len(self._metrics)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._metrics)

    def column(self, column: str) -> Metric:
        return self._by_column[column]

    def key(self, key: str) -> Metric | None:
        """The first metric called ``key`` (its roles share name, unit and kind)."""
        return self._by_key.get(key)

    def metric(self, key: str, current: str = MODELLED) -> Metric:
        """The entry of a metric ``key`` (or column); an unknown key reads as itself,
        without a unit. ``current``: what the device's current and charge are."""
        found = self._by_key.get(key) or self._by_column.get(key)
        if found is None:
            found = Metric(key, key, "", key.replace("_", " "), "", MEASURED, 2, key)
        return found.with_current(current)

    def of(self, key: str, role: str) -> Metric | None:
        return next((m for m in self._metrics if (m.key, m.role) == (key, role)), None)

    @property
    def names(self) -> frozenset[str]:
        """Every key and column: what no other module spells."""
        return frozenset(m.key for m in self) | frozenset(m.column for m in self)

    def in_summary(self) -> list[Metric]:
        return [m for m in self if m.summary is not None]

    def in_group(self, group: str) -> list[Metric]:
        return [m for m in self if m.group == group and m.summary is not None]

    def findings(self) -> list[Metric]:
        """The headline findings' metrics: the analysis' comparisons first, then the
        metrics compared over runs, each in registry order."""
        return [m for m in self if m.finding == SERIES] + [
            m for m in self if m.finding == OVER_RUNS
        ]

    def across_experiments(self) -> list[Metric]:
        """What ``report A B`` compares: the findings' metrics, then the others it compares."""
        headline = self.findings()
        return headline + [m for m in self if m.across_experiments and m not in headline]

    def counted_on(self, target: str) -> Registry:
        """This registry for an experiment whose emitter was the device client on ``target``
        (``run --target``): the emitter's metrics taken from the firmware's counts say
        *counted on <target>*; such a current is no meter's (it leaves ``--current``)."""
        return Registry(
            dataclasses.replace(m, kind=f"{COUNTED} on {target}", follows_current=False)
            if m.from_counts and m.role == "emitter"
            else m
            for m in self._metrics
        )

    def extended(self, *metrics: Metric) -> Registry:
        """This registry with more metrics (tests add one and see it everywhere)."""
        return Registry((*self._metrics, *metrics))


METRICS = Registry(
    (
        Metric("runs", "runs", "", "completed runs", "", MEASURED, 0, "runs", "handshake",
               lower_is_better=None, summary=POOLED),
        *(
            Metric(column, column, "emitter", f"{phase.replace('_', ' ')} time",
                   "ms", MEASURED, 2, phase.replace("_", " "), "handshake")
            for phase, column in zip(PHASES, PHASE_COLUMNS, strict=True)
        ),
        Metric("latency_mean_ms", LATENCY, "end-to-end", "mean end-to-end latency", "ms",
               MEASURED, 2, "latency mean", "handshake", summary=POOLED),
        Metric("latency_p50_ms", "latency_p50_ms", "end-to-end",
               "median (p50) end-to-end latency", "ms", MEASURED, 2, "p50", "handshake",
               summary=POOLED, finding=OVER_RUNS),
        Metric("latency_p95_ms", "latency_p95_ms", "end-to-end", "p95 end-to-end latency", "ms",
               MEASURED, 2, "p95", "handshake", summary=POOLED),
        Metric("latency_p99_ms", "latency_p99_ms", "end-to-end", "p99 end-to-end latency", "ms",
               MEASURED, 2, "p99", "handshake", summary=POOLED, finding=OVER_RUNS),
        # The phases' sum per run: a finding, not a summary column (the phases are).
        Metric("setup_ms", "setup_ms", "emitter", "connection set-up time", "ms", MEASURED, 2,
               "set-up", summary=None, finding=OVER_RUNS),
        Metric(SETUP_BYTES_OUT, SETUP_BYTES_OUT, "emitter", "set-up bytes sent", "B",
               MEASURED, 0, "set-up out", "setup"),
        Metric(SETUP_BYTES_IN, SETUP_BYTES_IN, "emitter", "set-up bytes received", "B",
               MEASURED, 0, "set-up in", "setup"),
        Metric("client_hello_segments", "client_hello_segments", "emitter",
               "ClientHello segments", "MSS", MEASURED, 0, "ClientHello", "setup"),
        Metric("first_message_ms", "first_message_ms", "emitter",
               "time from connecting to the first message", "ms", MEASURED, 2,
               "to 1st message", "setup"),
        Metric("seal_us", "seal_us", "emitter", "median seal time", "µs", MEASURED, 1, "seal",
               "message", summary=POOLED, from_counts=True),
        Metric("open_us", "open_us", "receiver", "median open time", "µs", MEASURED, 1, "open",
               "message", summary=POOLED),
        *_per_role(_CPU_PER_MESSAGE, {"emitter": "emitter_cpu_us_per_message",
                                      "receiver": "receiver_cpu_us_per_message"}),
        Metric(WIRE_BYTES, WIRE_BYTES, "emitter",
               "bytes sent per message", "B", MEASURED, 1, "wire/msg", "message",
               finding=OVER_RUNS),
        Metric("expansion_bytes", "expansion_bytes", "emitter",
               "bytes sent per message beyond the payload", "B", MEASURED, 1, "expansion",
               "message"),
        *_per_role(_CURRENT, {"emitter": "emitter_current_ma", "receiver": "receiver_current_ma"}),
        *_per_role(_CHARGE, {"emitter": "emitter_charge_mah", "receiver": "receiver_charge_mah"}),
        Metric(THROUGHPUT, THROUGHPUT, "end-to-end", "payload throughput",
               "KiB/s", MEASURED, 1, "throughput", "per-byte", sources=(THROUGHPUT,),
               lower_is_better=False),
        Metric("cpu_per_byte_emitter_us", "cpu_per_byte_us", "emitter",
               "CPU time per payload byte", "µs/B", MEASURED, 3, "CPU/byte emitter", "per-byte",
               sources=("cpu_per_byte_emitter_us",), from_counts=True),
        # The headline of a counted saturating run (the device emitter's throughput is QEMU's):
        # the client instructions of its messages per payload byte, from the firmware's
        # counts (runner.collect counted_per_byte); NaN for a host emitter.
        Metric(INSTRUCTIONS_PER_BYTE, "instructions_per_byte", "emitter",
               "client instructions per payload byte", "instr/B", COUNTED, 1,
               "instructions/byte emitter", "per-byte", from_counts=True),
        Metric(ENERGY_PER_BYTE, "energy_per_byte_uj", "emitter",
               "energy per payload byte", "µJ/B", MODELLED, 3, "energy/byte emitter",
               "per-byte", sources=(ENERGY_PER_BYTE,), from_counts=True),
        Metric("energy_per_byte_receiver_uj", "energy_per_byte_uj", "receiver",
               "energy per payload byte", "µJ/B", MODELLED, 3, "energy/byte receiver",
               "per-byte", sources=("energy_per_byte_receiver_uj",)),
        Metric("echo_rtt_p50_ms", "echo_rtt_p50_ms", "emitter", "median echo round trip", "ms",
               MEASURED, 3, "echo RTT p50", "per-byte", sources=("echo_rtt_p50_ms",)),
        Metric("peak_rss_mib", "peak_rss_mib", "", "peak resident memory of an agent", "MiB",
               MEASURED, 1, "peak RSS", "message", summary=POOLED),
        Metric("achieved_rate_hz", "achieved_rate_hz", "emitter", "publishing rate achieved",
               "Hz", MEASURED, 1, "rate achieved", "message", sources=("achieved_rate_hz",),
               lower_is_better=False),
        Metric("tls_heap_handshake_kib", "tls_heap_handshake_kib", "emitter",
               "TLS heap peak during the handshake", "KiB", MEASURED, 1, "heap TLS handshake",
               "stack", sources=("tls_heap_handshake_peak_bytes",), scale=1 / 1024,
               from_counts=True),
        Metric("tls_heap_steady_kib", "tls_heap_steady_kib", "emitter",
               "TLS heap in the steady state", "KiB", MEASURED, 1, "heap steady", "stack",
               sources=("tls_heap_steady_bytes",), scale=1 / 1024, from_counts=True),
        Metric("flash_kib", "flash_kib", "emitter", "program flash (text + data)", "KiB",
               MEASURED, 1, "flash text+data", "stack",
               sources=("footprint_text_bytes", "footprint_data_bytes"), scale=1 / 1024,
               from_counts=True),
        Metric("static_ram_kib", "static_ram_kib", "emitter", "static RAM (data + bss)", "KiB",
               MEASURED, 1, "static RAM data+bss", "stack",
               sources=("footprint_data_bytes", "footprint_bss_bytes"), scale=1 / 1024,
               from_counts=True),
        Metric("fleet_size", "fleet_size", "", "devices in the fleet", "", MEASURED, 0,
               "devices", FLEET, sources=("fleet_size",), lower_is_better=None),
        Metric("connect_rate_hz", "connect_rate_hz", "broker", "connection rate", "/s",
               MEASURED, 1, "connects", FLEET, sources=("connect_rate_hz",),
               lower_is_better=False),
        Metric("setup_p99_ms", "setup_p99_ms", "", "p99 session set-up time across the fleet",
               "ms", MEASURED, 1, "set-up p99", FLEET, sources=("setup_p99_ms",)),
        Metric("fleet_latency_p99_ms", "fleet_latency_p99_ms", "end-to-end",
               "p99 end-to-end latency across the fleet", "ms", MEASURED, 2, "latency p99",
               FLEET, sources=("latency_p99_ms",)),
        Metric("fleet_lost", "fleet_lost", "", "messages lost per run across the fleet", "",
               MEASURED, 1, "lost per run", FLEET, sources=("messages_lost",)),
        # The embedded broker's cost, sampled in every run (runner.broker_watch): the
        # question a fleet size or a TLS choice puts to the server side.
        Metric("broker_cpu_percent", "broker_cpu_percent", "broker", "CPU load", "% of a core",
               MEASURED, 2, "broker CPU", "broker", sources=("broker_cpu_mean_percent",),
               across_experiments=True),
        Metric("broker_rss_mib", "broker_rss_mib", "broker", "peak resident memory", "MiB",
               MEASURED, 1, "broker RSS", "broker", sources=("broker_rss_peak_bytes",),
               scale=1 / 2**20, across_experiments=True),
        Metric("lost", "lost", "", "messages lost", "", MEASURED, 0, "lost", "message",
               summary=POOLED),
        Metric("rejected", "rejected", "receiver", "messages rejected", "", MEASURED, 0,
               "rejected", "message", summary=POOLED),
    )
)  # fmt: skip


def metric(key: str, current: str = MODELLED) -> Metric:
    """The entry of a metric ``key`` (or column); an unknown key reads as itself, without a
    unit. ``current`` is what the device's current and charge are: MODELLED or "measured
    with <meter>" (the report's ``--current``)."""
    return METRICS.metric(key, current)
