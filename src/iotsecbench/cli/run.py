"""``iotsecbench run``: execute an experiment and print its summary."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from iotsecbench.cli import output_console, words
from iotsecbench.errors import Interrupted, SpecError

if TYPE_CHECKING:
    from iotsecbench.spec.models import ExperimentSpec


def _int_list(text: str | None, option: str) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(part) for part in words(text, option) or []]
    except ValueError:
        raise SpecError(f"{option} takes whole numbers separated by commas, got {text!r}") from None


def _float_list(text: str | None, option: str) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(part) for part in words(text, option) or []]
    except ValueError:
        raise SpecError(f"{option} takes numbers separated by commas, got {text!r}") from None


# The command-line option behind each ExperimentSpec field, to name it in a refusal.
OPTION_OF_FIELD = {
    "configurations": "--configs",
    "duration_s": "--duration",
    "repetitions": "--reps",
    "payload_bytes": "--payload",
    "rate_hz": "--rate",
    "qos": "--qos",
    "network": "--network",
    "device": "--device",
    "seed": "--seed",
    "devices": "--devices",
    "connect_ramp_hz": "--ramp",
    "target": "--target",
    "fleet_agent": "--fleet-agent",
    "storm_at_s": "--storm-at",
    "fleet_receivers": "--receivers",
    "fleet_max_connecting": "--max-connecting",
    "fleet_raw_devices": "--raw-devices",
}


def _raw_devices(text: str | None) -> int | None:
    """--raw-devices N or all (every device of the largest fleet a spec allows)."""
    if text is None:
        return None
    if text.strip().lower() == "all":
        from iotsecbench.spec.models import FLEET_MAX_DEVICES

        return FLEET_MAX_DEVICES
    try:
        return int(text)
    except ValueError:
        raise SpecError(f"--raw-devices {text!r}: give a number of devices or all") from None


def _spec_to_run(
    spec_file: Path | None,
    preset: str | None,
    overrides: dict[str, object],
    out: Path | None,
    resume: bool,
    notes: list[str],
) -> ExperimentSpec:
    """The spec from the file, preset and options; with --resume, the one stored in --out
    (never a default: spec.load.resume_spec refuses what it cannot find). With --target, the
    target's device profile and (a preset) the configurations its firmware runs; ``notes``
    gets what the user should be told about that."""
    from iotsecbench.runner.experiment import canonical_configurations
    from iotsecbench.spec.load import load_spec, resume_spec

    def canonical(spec: ExperimentSpec) -> ExperimentSpec:
        spec = canonical_configurations(spec)
        if spec.target is None:
            return spec
        # what a device run stores (so --resume compares like with like): the target's
        # device profile (its clock and CPI) unless --device names one, and with a preset the
        # configurations the firmware has
        from iotsecbench.runner.device_emitter import device_subset
        from iotsecbench.vmcu.targets import TARGETS

        profile = TARGETS[spec.target].profile
        if overrides.get("device") is None and spec.device != profile:
            if "device" in spec.model_fields_set:
                notes.append(
                    f"device profile {profile} ({spec.target}'s) instead of {spec.device}: "
                    "--device overrides"
                )
            spec = spec.model_copy(update={"device": profile})
        if preset is None or overrides.get("configurations") is not None:
            return spec
        # A study's subset is still worth running; a silent one would pass for the study.
        subset, left_out = device_subset(spec)
        if not subset.configurations:
            raise SpecError(
                f"--preset {preset} --target {spec.target}: the device client runs none of "
                f"its configurations ({', '.join(left_out)})"
            )
        if left_out:
            why = "; ".join(f"{name}: {problem}" for name, problem in left_out.items())
            notes.append(
                f"--preset {preset} on {spec.target} runs {len(subset.configurations)} of its "
                f"{len(spec.configurations)} configurations; left out (docs/device-client.md, "
                f"'Presets'): {why}"
            )
        return subset

    if preset is not None and overrides.get("target") and overrides.get("stack") is None:
        overrides = {**overrides, **_device_stacks(preset, notes)}
    if not resume:
        return canonical(load_spec(spec_file, preset, overrides))
    if out is None:
        raise SpecError("--resume continues the experiment in --out DIR: give --out")
    return resume_spec(out, spec_file, preset, overrides, OPTION_OF_FIELD, canonical)


def _device_stacks(preset: str, notes: list[str]) -> dict[str, object]:
    """A preset naming host stacks (``pq``: OpenSSL 3.5 and 3.0) on the device: the device
    client's stacks in their place, each configuration on the ones whose build runs it
    (``device_subset``): payload schemes on mbedTLS, post-quantum TLS on wolfSSL."""
    from iotsecbench.spec.load import preset_data
    from iotsecbench.vmcu.client import DEVICE_STACKS

    named = preset_data(preset).get("stack")
    named = [named] if isinstance(named, str) else named or []
    if not named or all(stack in DEVICE_STACKS for stack in named):
        return {}
    notes.append(
        f"--preset {preset} --target: the device client's stacks {', '.join(DEVICE_STACKS)} in "
        f"place of the preset's {', '.join(named)} (host libraries; --stack chooses)"
    )
    return {"stack": list(DEVICE_STACKS)}


def _check_network(profiles: list[str], broker: str | None) -> None:
    """Emulated networks need root and our own broker; refuse early, in one line."""
    from iotsecbench.lab.network import is_loopback, require_support

    if broker is not None and not all(is_loopback(name) for name in profiles):
        raise SpecError("--network profiles need the embedded broker; drop --broker")
    require_support(profiles)  # NoPermissionError (exit 3) when not root / no namespaces


def run(
    spec_file: Annotated[
        Path | None,
        typer.Argument(
            help="Experiment spec (TOML). Without it, the built-in default experiment runs "
            "(plain, tls1.2, ecdh-p256-aes128-cbc and its AEAD fix; about 3 minutes)."
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            help="A built-in experiment instead of a file: default, stability, payload-schemes, "
            "block-sizes, pq (docs/studies.md)."
        ),
    ] = None,
    configs: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated configurations, e.g. plain,tls1.2,ecdh-p256-aes128-gcm "
            "(see `iotsecbench schemes`)."
        ),
    ] = None,
    duration: Annotated[
        float | None, typer.Option(help="Publishing time per run, seconds.")
    ] = None,
    reps: Annotated[int | None, typer.Option(help="Repetitions of every cell.")] = None,
    payload: Annotated[
        str | None, typer.Option(help="Payload size(s) in bytes, comma-separated (≥16).")
    ] = None,
    rate: Annotated[
        str | None,
        typer.Option(
            help="Message rate(s) in Hz, comma-separated (up to 10 kHz on the Python agents, "
            "1 MHz on a native --stack), or max: as fast as the broker takes them "
            "(--saturating; the achieved rate is stored per run)."
        ),
    ] = None,
    qos: Annotated[str | None, typer.Option(help="MQTT QoS level(s) 0,1,2.")] = None,
    network: Annotated[
        str | None,
        typer.Option(
            "--network",
            help="Network profile(s), comma-separated: loopback (default), ideal, wifi, "
            "wifi-lossy, wifi-lossy-5, cellular-nbiot, lora, or one from the spec's [networks]. "
            "Anything but loopback needs root (docs/network.md).",
        ),
    ] = None,
    transport: Annotated[
        str | None,
        typer.Option(
            help="How messages travel, comma-separated: mqtt (through the broker, default) or "
            "tcp (emitter straight to receiver, length-prefixed frames; docs/wire-format.md)."
        ),
    ] = None,
    method: Annotated[
        str | None,
        typer.Option(
            help="unidirectional (default) and/or echo (tcp: the receiver returns every "
            "block resealed; round trips recorded), comma-separated."
        ),
    ] = None,
    stack: Annotated[
        str | None,
        typer.Option(
            help="The client's TLS stack(s), comma-separated: openssl (the Python agents on "
            "Debian's OpenSSL 3.0, default), openssl-3.5 (agents and broker on OpenSSL 3.5.5: "
            "post-quantum TLS, docs/post-quantum.md; chosen for every configuration when one "
            "needs it), mbedtls (2.28, TLS 1.2) or wolfssl (5.5, TLS 1.2/1.3) — the native C "
            "agent on a device stack, with its heap and footprint (docs/native-agents.md) — or "
            "wolfssl-5.9 (the native agent on wolfSSL 5.9.4 built from source: ML-KEM groups, "
            "ML-DSA certificates).",
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="The emitter as a virtual microcontroller: rv32imc or cortex-m4. The device's "
            "own firmware (MQTT over TLS on --stack mbedtls or wolfssl) publishes under QEMU at "
            "the spec's rate, size and QoS, every instruction counted; the receiver stays the "
            "Python agent. Samples carry counted instructions and the energy is counted on "
            "the target beside the priced figure, labelled 'counted on <target>' in the "
            "summary, findings and report. With --preset, the configurations the firmware has "
            "run and the rest are named; --devices N emulates a fleet (docs/device-client.md, "
            "'The whole run').",
        ),
    ] = None,
    saturating: Annotated[
        bool | None,
        typer.Option(
            "--saturating/--fixed-rate",
            help="Send as fast as the link and CPU allow for --duration instead of at --rate.",
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(help="Device profile for the energy model (default esp32-wroom-32)."),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for run order and payloads.")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Results directory (default results/<name>-<time>).")
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume", help="Continue an interrupted experiment in --out: completed runs are kept."
        ),
    ] = False,
    force_new_run: Annotated[
        bool,
        typer.Option(
            "--force-new-run",
            help="Start over in --out; earlier results are moved to previous-<time>/.",
        ),
    ] = False,
    broker: Annotated[
        str | None,
        typer.Option(help="Use an external broker, mqtt://[user:pass@]host:port or mqtts://…"),
    ] = None,
    broker_ca: Annotated[
        Path | None, typer.Option(help="CA certificate to trust for an external mqtts:// broker.")
    ] = None,
    report: Annotated[
        bool,
        typer.Option(
            "--report/--no-report", help="Analyse and write the HTML report when the runs are done."
        ),
    ] = True,
    keylog: Annotated[
        Path | None,
        typer.Option(
            "--keylog",
            help="Append TLS secrets (NSS key log format, Wireshark reads it) and payload-scheme "
            "session keys (docs/wire-format.md) to FILE (created 0600). Secrets: keep it safe.",
        ),
    ] = None,
    capture: Annotated[
        bool,
        typer.Option(
            "--capture",
            help="Record each run's traffic into runs/RUN/capture.pcapng (0600), taken with "
            "dumpcap on the device's link (the emitter's namespace with --network, loopback "
            "otherwise), the run's TLS secrets inside: Wireshark and tshark open it decrypted "
            "(docs/capture.md). Needs wireshark-common and the privilege to capture.",
        ),
    ] = False,
    devices: Annotated[
        int | None,
        typer.Option(
            help="A fleet: this many emitting devices per run, each with its own connection, "
            "credentials, keys and receiver, on one broker (docs/scale.md). Refused above what "
            "this machine allows (file descriptors, ports, processes, memory; with --target, "
            "the cores that keep QEMU at real time: `doctor` prints it).",
        ),
    ] = None,
    ramp: Annotated[
        float | None,
        typer.Option(
            help="With --devices: devices that start connecting per second (default: all at once)."
        ),
    ] = None,
    fleet_agent: Annotated[
        str | None,
        typer.Option(
            "--fleet-agent",
            help="Who drives a fleet: auto (default: the native fleet agent, one process per "
            "core, for mqtt runs on loopback without a payload scheme on stack openssl, "
            "mbedtls or wolfssl; two agent processes per device otherwise) or processes "
            "(always two per device). docs/scale.md.",
        ),
    ] = None,
    storm_at: Annotated[
        float | None,
        typer.Option(
            "--storm-at",
            help="With the fleet agent: SECONDS after the emitters start, cut every emitter's "
            "connection and reconnect all at once (a reconnect storm; a resume profile offers "
            "each device's TLS session).",
        ),
    ] = None,
    receivers: Annotated[
        str | None,
        typer.Option(
            "--receivers",
            help="With the fleet agent: devices (default: a receiver connection per device) "
            "or backend (a few backend subscribers per fleet process hold every device's "
            "topics, so the broker holds one connection per device: 10,000 devices fit in "
            "20,000 file descriptors). Each message is counted per device either way. "
            "docs/scale.md, 'Ten thousand devices'.",
        ),
    ] = None,
    max_connecting: Annotated[
        int | None,
        typer.Option(
            "--max-connecting",
            help="With the fleet agent: at most N connection set-ups (TCP, TLS, CONNECT to "
            "CONNACK) in flight across the fleet, the others queued, so that a ramp or a storm "
            "does not overrun the broker's accept queue (default: no bound).",
        ),
    ] = None,
    raw_devices: Annotated[
        str | None,
        typer.Option(
            "--raw-devices",
            help="With --devices: keep the raw messages, samples and operations of N devices "
            "spread evenly from device 0 (default 100), or all; every device gets a summary "
            "row (fleet_devices) either way. docs/scale.md, 'Storage'.",
        ),
    ] = None,
    executor_name: Annotated[
        str,
        typer.Option(
            "--executor",
            help="local (runs one by one on this machine, default) or dask: blocks of runs "
            "(every configuration of one repetition) on Dask workers, a local cluster of "
            "--dask-workers unless --scheduler names one (docs/scale.md).",
        ),
    ] = "local",
    scheduler: Annotated[
        str | None,
        typer.Option(
            help="With --executor dask: an existing cluster's scheduler, tcp://HOST:PORT."
        ),
    ] = None,
    dask_workers: Annotated[
        int,
        typer.Option(
            "--dask-workers",
            help="With --executor dask and no --scheduler: worker processes of the local "
            "cluster. 1 (default) runs in sequence; more run in parallel on this machine and "
            "disturb each other's timing (recorded with every run).",
        ),
    ] = 1,
    split_fleet: Annotated[
        bool,
        typer.Option(
            "--split-fleet",
            help="With --executor dask and --devices: run each run here (broker, its CPU "
            "samples, storage) and split its fleet over the workers, one share each; the "
            "embedded broker listens on loopback, so the workers must run on this machine "
            "(docs/scale.md).",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
    simulate: Annotated[
        bool,
        typer.Option(
            "--simulate", hidden=True, help="Synthetic measurements (tests of the pipeline only)."
        ),
    ] = False,
) -> None:
    """Run an experiment on a real mosquitto broker and store every raw measurement.

    Each run starts a fresh broker, a receiver and an emitter process; handshake phases,
    every message, 10 Hz samples of CPU, TCP bytes and memory are stored in
    OUT/results.duckdb, one transaction per run. Device current is *modelled* from the
    measured activity (docs/energy-model.md). Then `iotsecbench analyze OUT`.
    """
    from iotsecbench.runner.experiment import run_experiment, with_post_quantum_stack
    from iotsecbench.runner.progress import RichProgress

    overrides = {
        "configurations": words(configs, "--configs"),
        "duration_s": duration,
        "repetitions": reps,
        "payload_bytes": _int_list(payload, "--payload"),
        "rate_hz": None if rate == "max" else _float_list(rate, "--rate"),
        "qos": _int_list(qos, "--qos"),
        "network": words(network, "--network"),
        "transport": words(transport, "--transport"),
        "method": words(method, "--method"),
        "stack": words(stack, "--stack"),
        "saturating": True if rate == "max" else saturating,
        "device": device,
        "seed": seed,
        "devices": devices,
        "connect_ramp_hz": ramp,
        "target": target,
        "fleet_agent": fleet_agent,
        "storm_at_s": storm_at,
        "fleet_receivers": receivers,
        "fleet_max_connecting": max_connecting,
        "fleet_raw_devices": _raw_devices(raw_devices),
    }
    if resume and force_new_run:
        raise SpecError(
            "--resume continues the experiment in --out, --force-new-run starts over: give one"
        )
    notes: list[str] = []
    spec = _spec_to_run(spec_file, preset, overrides, out, resume, notes)
    console = Console(stderr=True)
    for note in notes:
        console.print(f"note: {note}", highlight=False)
    for canonical_name, written in spec.configuration_labels.items():
        console.print(f"note: configuration {written} is stored as {canonical_name}")
    spec, stack_note = with_post_quantum_stack(spec)
    if stack_note is not None:
        console.print(f"note: {stack_note}", highlight=False)
    if not simulate:
        _check_network(spec.network, broker)
    if spec.target is not None and not simulate:
        from iotsecbench.runner.device_emitter import prepare_device_run

        for line in prepare_device_run(spec):
            console.print(line, highlight=False)
    if out is None:
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        out = Path("results") / f"{spec.name}-{stamp}"
    if split_fleet and (spec.fleet_receivers != "devices" or spec.fleet_max_connecting):
        raise SpecError(
            "--receivers backend and --max-connecting run in one machine's fleet processes: "
            "drop them with --split-fleet"
        )
    executor = _executor(
        executor_name, scheduler, dask_workers, keylog, capture, simulate, console, split_fleet
    )
    try:
        outcome = run_experiment(
            spec,
            out,
            executor,
            resume=resume,
            force_new=force_new_run,
            broker_url=broker,
            broker_ca_file=broker_ca,
            observer=None if quiet else RichProgress(console),
            broker_version="simulated" if simulate else None,
            key_log=keylog is not None and not simulate,
            capture=capture,
            checked=lambda: _import_post_processing(report),
        )
    except KeyboardInterrupt:  # noted while starting or storing, raised when that was done
        raise Interrupted(
            f"interrupted; what was stored stays: `iotsecbench run --resume --out {out}` "
            "continues (and draws the report)"
        ) from None
    stdout = output_console()
    try:
        _summarise_and_report(out, outcome, report, stdout, console)
    except KeyboardInterrupt:  # after the runs: every one is stored
        raise Interrupted(
            f"interrupted after every run was stored; `iotsecbench report {out}` draws the "
            f"report (`run --resume --out {out}` also finishes the statistics)"
        ) from None
    failed = outcome.failed
    stdout.print(
        f"results: {out}/results.duckdb ({len(outcome.outcomes)} runs executed, "
        f"{outcome.skipped} kept, {len(failed)} failed)"
    )
    if failed:
        for failure in failed:
            stdout.print(f"[red]failed[/] {failure.run_row['run_id']}: {failure.run_row['error']}")
        raise typer.Exit(1)


def _executor(
    name: str,
    scheduler: str | None,
    workers: int,
    keylog: Path | None,
    capture: bool,
    simulate: bool,
    console: Console,
    split_fleet: bool = False,
) -> Any:
    """The executor ``--executor`` names, its options checked before anything starts."""
    if name not in ("local", "dask"):
        raise SpecError(f"--executor {name!r}: use local or dask")
    if capture:
        if name != "local":
            raise SpecError(
                "--capture records traffic on this machine: use it with --executor local"
            )
        if simulate:
            raise SpecError("--capture records real traffic; --simulate makes none")
        from iotsecbench.lab.capture import require_capture

        require_capture()  # exit 3 (no dumpcap, no privilege) before anything starts
    if split_fleet and name != "dask":
        raise SpecError("--split-fleet splits a fleet over Dask workers: add --executor dask")
    if name == "local":
        if scheduler is not None or workers != 1:
            raise SpecError("--scheduler and --dask-workers need --executor dask")
        if simulate:
            from iotsecbench.runner.simulated import SimulatedExecutor

            return SimulatedExecutor()
        from iotsecbench.runner.local import LocalExecutor

        return LocalExecutor(keylog=keylog, capture=capture)
    if keylog is not None:
        raise SpecError("--keylog writes a file on this machine: use it with --executor local")
    if scheduler is not None and workers != 1:
        raise SpecError("--dask-workers starts a local cluster: drop it with --scheduler")
    from iotsecbench.runner.cluster import ClusterOptions, DaskSweep

    options = ClusterOptions(scheduler=scheduler, workers=workers, simulate=simulate)
    if split_fleet:
        from iotsecbench.runner.fleet_split import FleetSplit
        from iotsecbench.runner.local import LocalExecutor

        console.print(
            "note: runs go one by one; each fleet's devices are split over the Dask workers",
            highlight=False,
        )
        return LocalExecutor(fleet_split=FleetSplit(DaskSweep(options).client))
    sweep = DaskSweep(options)
    console.print(f"note: {options.note}", highlight=False)
    return sweep


def _import_post_processing(report: bool) -> None:
    """Import what the summary, the statistics and the report need, before the runs (and
    after the experiment's checks: a refusal does not wait for them).

    A signal inside an extension module's initialisation (matplotlib's ft2font, found by
    benchmarks/signal_tally.py) leaves a half-made module and aborts the interpreter at exit,
    so the imports hold signals back until they are done — seconds on a busy machine. Done
    before the runs, they cannot delay a Ctrl-C after them (which stops within a second)."""
    from iotsecbench.runner.interrupts import SignalGuard

    with SignalGuard():
        import iotsecbench.report.summary
        import iotsecbench.report.terminal

        if report:  # the statistics and the report: without them (--no-report) none of
            # pandas' heavier neighbours is needed, about 2.5 s of CPU a `run` saves
            import iotsecbench.report.build  # (matplotlib, with its backend)
            import iotsecbench.workflows.postprocess  # noqa: F401  (scipy, arch: the bootstraps)


def _summarise_and_report(
    out: Path, outcome: Any, report: bool, stdout: Console, console: Console
) -> None:
    """After the runs: the statistics and the report, then the summary tables — after the
    statistics so that each modelled column shows the model's range the analysis derived —
    and the findings (their modules were imported before the runs:
    ``_import_post_processing``)."""
    from iotsecbench.report.summary import terminal_summary
    from iotsecbench.report.terminal import finding_lines, summary_tables, warning_lines

    for leftover in outcome.leftovers_stopped:
        stdout.print(f"stopped a process left by an earlier runner of {out}: {leftover}")
    frame, target, counted = terminal_summary(out)

    def print_summary(model: Any) -> None:
        for table in summary_tables(frame, target=target, model=model):
            stdout.print(table)
        for line in warning_lines(frame):
            stdout.print(f"[yellow]security warning[/] {line}")
        for line in counted:
            stdout.print(f"counted: {line}", highlight=False)

    if not report or not (outcome.outcomes or outcome.skipped):
        print_summary(None)
        return
    from iotsecbench.workflows.postprocess import analyze_and_report  # imported before the runs

    # What was measured is on disk before the statistics begin: said at once, so that a
    # wait (or a Ctrl-C) during them never leaves the user wondering about the runs.
    stored = len(outcome.outcomes) + outcome.skipped
    stdout.print(f"{stored} run(s) stored in {out}; statistics and report next", highlight=False)
    try:
        with console.status("analysing (block bootstrap) and drawing the report…"):
            finished = analyze_and_report(out)
    except KeyboardInterrupt:
        print_summary(None)  # what the runs measured, still shown; then exit 130
        raise
    print_summary(finished.model)
    if finished.model is not None:
        stdout.print(
            f"model {finished.model.level * 100:.0f} %: the central "
            f"{finished.model.level * 100:.0f} % of a modelled figure over draws of the "
            f"device profile's ranges ({finished.model.method})",
            highlight=False,
        )
    if finished.analysis_problem:
        stdout.print(f"[yellow]statistics skipped[/] {finished.analysis_problem}")
    elif finished.analysis_path is not None:
        stdout.print(f"statistics: {finished.analysis_path}")
    if finished.findings is not None:
        lines = finding_lines(finished.findings)
        if lines:
            stdout.rule("Findings (against the baseline; 95 % intervals)", align="left")
            for line in lines:
                stdout.print(line, highlight=False)
    if finished.report_path is not None:
        stdout.print(f"report: {finished.report_path}")


def register(app: typer.Typer) -> None:
    app.command(no_args_is_help=False)(run)
