"""The device's own client (vmcu/client, docs/device-client.md): bare metal on the virtual MCUs
under QEMU, its UART bridged to the lab's real mosquitto, counted to the instruction.

One QEMU run per case: every stack × target × TLS 1.2/1.3 × RSA/ECDSA P-256 completes the
handshake and CONNECT/CONNACK with what was negotiated read from the wire and checked; one seed
repeats to the instruction and another spreads; the count outside the wait groups does not
depend on the network; post-quantum TLS 1.3 on wolfSSL against the OpenSSL 3.5 broker; a
firmware that hangs fails within its time and leaves no QEMU behind.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path

import psutil
import pytest

from iotsecbench.bench.device import run_counted_benchmark
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from iotsecbench.lab.pki import create_certificates
from iotsecbench.runner.counted import CountedMismatch, counted_connection
from iotsecbench.runner.device import run_device
from iotsecbench.security.tls import parse_profile
from iotsecbench.security.tls.stacks import group_ids, suite_ids
from iotsecbench.vmcu import TARGETS, missing_tools
from iotsecbench.vmcu.build import library_archive
from iotsecbench.vmcu.client import (
    DEVICE_BUILDS,
    device_firmware,
    device_profiles,
    wrapped_symbols,
)
from iotsecbench.vmcu.device import DeviceConfig, seed_for
from iotsecbench.vmcu.sources import ARCHIVES
from tests.conftest import run_cli_forked

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MATRIX = ["plain", "tls1.2/rsa2048", "tls1.2/ecdsa-p256", "tls1.3/x25519/rsa2048",
          "tls1.3/x25519/ecdsa-p256"]  # fmt: skip


def _ready(name: str) -> str:
    missing = missing_tools(TARGETS[name])
    if missing:
        pytest.skip(f"the virtual-MCU target {name} needs {', '.join(missing)}")
    return name


@pytest.fixture(params=sorted(TARGETS), scope="module")
def target(request, mosquitto):
    return _ready(request.param)


@pytest.fixture
def m4(mosquitto):
    """The Cortex-M4, whose counter is a timer of virtual time (board.c polls, never sleeps)."""
    return _ready("cortex-m4")


@pytest.fixture
def rv32(mosquitto):
    return _ready("rv32imc")


def count(names, work, target, stack, **options):
    """The counted benchmark of ``names`` (one repetition unless told)."""
    options.setdefault("repetitions", 1)
    profiles = device_profiles(names)
    return run_counted_benchmark(profiles, work, target_name=target, stack=stack, **options)


@pytest.mark.parametrize("stack", ["mbedtls", "wolfssl"])
def test_every_stack_target_version_and_certificate_connects(tmp_path, target, stack):
    bench = count(MATRIX, tmp_path, target, stack)
    for result in bench.results:
        summary = result.summary()
        connection = result.samples[0].connection
        groups = connection.counted.groups
        assert connection.counters["stack_high_water_bytes"] > 0, result.name
        assert summary["firmware"]["text_bytes"] > 0
        if result.profile is None:  # plain MQTT: CONNECT → CONNACK only
            assert list(groups) == ["MQTT_CONNECT"] and connection.negotiated is None
            continue
        profile = result.profile
        negotiated = connection.negotiated
        assert negotiated["version"] == profile.version, result.name
        assert negotiated["certificate"] == profile.certificate, result.name
        family = "ecdsa" if profile.certificate == "ecdsa-p256" else "rsa"
        assert negotiated["signature_algorithm"].startswith(family), result.name
        if profile.version == "1.3":
            assert negotiated["group"] == "x25519"
            received = [name for name, _ in negotiated["handshake_messages_received"]]
            assert received[:5] == ["server_hello", "encrypted_extensions", "certificate",
                                    "certificate_verify", "finished"]  # fmt: skip
        for name in ("CLIENT_HELLO", "CERT_CHAIN", "CERT_VERIFY", "KEY_DERIVE", "MQTT_CONNECT"):
            assert groups[name].client > 0, (result.name, name)
        # verifying the server's signature is public-key arithmetic (and, in TLS 1.3, opening
        # its record), found by the wrappers
        verify = groups["CERT_VERIFY"]
        assert max(verify.primitives, key=verify.primitives.get) == "pk", result.name
        assert sum(verify.primitives.values()) > 0.9 * verify.client, result.name
        assert summary["memory"]["heap_handshake_peak_bytes"] > 10_000
        assert summary["firmware"]["tls_stack_text_bytes"] > 50_000
        assert summary["wire"]["stream_bytes_received"] > 1000
        assert summary["bookkeeping_residue"]["share"] < 1e-3


def test_one_seed_repeats_to_the_instruction_another_spreads(tmp_path, m4):
    """One target suffices: the seed reaches both through the same host code (and the network
    test repeats a seed on both)."""
    target = m4
    profile = ["tls1.3/x25519/ecdsa-p256"]
    first = count(profile, tmp_path, target, "mbedtls", repetitions=2, seed=5).results[0]
    again = count(profile, tmp_path, target, "mbedtls", repetitions=2, seed=5).results[0]
    other = count(profile, tmp_path, target, "mbedtls", repetitions=2, seed=6).results[0]

    def per_group(result):
        return [
            {name: g.client for name, g in s.connection.counted.groups.items()}
            for s in result.samples
        ]

    assert per_group(first) == per_group(again)
    assert [s.seed_hex for s in first.samples] == [s.seed_hex for s in again.samples]
    totals = [s.connection.counted.invariant_instructions for s in first.samples + other.samples]
    assert len(set(totals)) == 4  # four seeds, four counts: the spread is real and reported
    spread = first.summary()["instructions"]["network_invariant"]
    assert spread["min"] < spread["max"]


def test_post_quantum_handshake_on_the_device(tmp_path, target):
    pytest.importorskip("iotsecbench.security.pq_openssl")
    from iotsecbench.security import pq_openssl

    if pq_openssl.problem() is not None:
        pytest.skip(f"post-quantum TLS needs OpenSSL 3.5: {pq_openssl.problem()}")
    result = count(["tls1.3/x25519mlkem768/mldsa44"], tmp_path, target, "wolfssl").results[0]
    connection = result.samples[0].connection
    negotiated = connection.negotiated
    assert negotiated["group"] == "X25519MLKEM768"
    assert negotiated["signature_algorithm"] == "mldsa44"
    assert negotiated["certificate"] == "mldsa44"
    sent = dict(negotiated["handshake_messages_sent"])
    assert sent["client_hello"] > 1184 + 32  # the ML-KEM-768 key share and X25519's
    assert negotiated["handshake_bytes_received"] > 2 * 2420  # two ML-DSA-44 signatures at least
    primitives = connection.counted.primitives()
    assert primitives["mlkem"] > 0 and primitives["mldsa"] > 0
    assert result.firmware.build == "wolfssl-pq"
    assert result.summary()["memory"]["heap_handshake_peak_bytes"] > 0


def test_counts_do_not_depend_on_the_network(tmp_path, target):
    from iotsecbench.lab.network import support_problem

    problem = support_problem()
    if problem is not None:
        pytest.skip(f"network emulation needs root and namespaces: {problem}")
    results = {
        network: count(["tls1.3/x25519/ecdsa-p256"], tmp_path, target, "wolfssl", seed=3,
                       network=network).results[0].samples[0].connection
        for network in ("ideal", "wifi", "cellular-nbiot")
    }  # fmt: skip
    clients = {
        network: {name: g.client for name, g in c.counted.groups.items()}
        for network, c in results.items()
    }
    assert clients["ideal"] == clients["wifi"] == clients["cellular-nbiot"]
    # ... while the waits and the wall times are the network's: NB-IoT's 800 ms round trips
    waits = {network: c.counted.wait_instructions for network, c in results.items()}
    assert waits["cellular-nbiot"] > waits["ideal"]
    assert results["cellular-nbiot"].wall_ns - results["ideal"].wall_ns > 0.8e9


def test_wrapped_primitives_exist_in_the_libraries(target):
    """A misspelt wrap would count nothing silently: every one names a defined symbol (the
    payload schemes' build also wraps crypto_lwc.c's ciphers and crypto_mlkem.c's
    encapsulation, which are the client's)."""
    chosen = TARGETS[target]
    for name in ("mbedtls", "wolfssl", "wolfssl-pq", "mbedtls-scheme"):
        build = DEVICE_BUILDS[name]
        library = build.library
        archive = library_archive(chosen, library.label, ARCHIVES[library.archive],
                                  library.sources, library.flags(), library.configs())  # fmt: skip
        listing = subprocess.run([f"{chosen.prefix}-nm", "--defined-only", str(archive)],
                                 capture_output=True, text=True, check=True).stdout  # fmt: skip
        defined = {line.split()[-1] for line in listing.splitlines() if " T " in line}
        clients = {"light_seal", "light_open", "light_ctr", "kem_encapsulate"}
        assert set(wrapped_symbols(build)) <= defined | (clients if build.schemes else set()), name


def _one_connection(tmp_path, target, broker_address, profile, timeout_s=60.0):
    firmware = device_firmware(TARGETS[target], "mbedtls")
    certs = create_certificates(tmp_path / "pki", profile.certificate)
    config = DeviceConfig(
        seed=seed_for(1, 0), client_id="dev", username=broker_address[2].name,
        password=broker_address[2].password, tls_version=profile.version,
        suites=tuple(suite_ids(profile)), groups=tuple(group_ids(profile)),
        ca_pem=certs.ca_file.read_bytes(),
    )  # fmt: skip
    return run_device(firmware, config, broker_address[:2], tmp_path / "device",
                      timeout_s=timeout_s)  # fmt: skip


def test_a_negotiation_other_than_the_request_fails_the_run(tmp_path, target):
    profile = parse_profile("tls1.3/x25519/ecdsa-p256")
    certs = create_certificates(tmp_path / "pki", profile.certificate)
    user = BrokerUser.random("device", read=[], write=[])
    with MosquittoBroker.with_tls(tmp_path / "broker", [user], profile, certs) as broker:
        address = (broker.listener.host, broker.listener.port, user)
        run = _one_connection(tmp_path, target, address, profile)
    assert run.problem is None
    assert counted_connection(run, profile).negotiated["group"] == "x25519"
    with pytest.raises(CountedMismatch, match="group x25519 but the profile asks for secp256r1"):
        counted_connection(run, parse_profile("tls1.3/P-256/ecdsa-p256"))


def _our_qemus(place: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline", "cwd"]):
        try:
            if str(place) in (process.info["cwd"] or ""):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


@pytest.mark.parametrize("closes", [False, True], ids=["server-silent", "server-closes"])
def test_a_hung_firmware_fails_in_time_and_leaves_no_qemu(tmp_path, rv32, closes):
    """A server that accepts and then says nothing (or hangs up): the device waits for its
    ServerHello for ever; the run fails with where it was, within its bound. (The watchdog is
    the runner's, the same for both targets: one suffices.)"""
    target = rv32
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        connection, _ = listener.accept()
        accepted.append(connection)
        if closes:
            connection.close()

    threading.Thread(target=serve, daemon=True).start()
    user = BrokerUser.random("device", read=[], write=[])
    profile = parse_profile("tls1.3/x25519/ecdsa-p256")
    started = time.monotonic()
    run = _one_connection(tmp_path, target, ("127.0.0.1", listener.getsockname()[1], user),
                          profile, timeout_s=4.0)  # fmt: skip
    elapsed = time.monotonic() - started
    listener.close()
    assert run.problem is not None
    if closes:
        assert "closed the connection" in run.problem and elapsed < 4.0
    else:
        assert "did not finish within 4 s" in run.problem and elapsed < 4.0 + 5
    assert "in segment" in run.problem and "wrote" in run.problem  # the ClientHello sent
    assert _our_qemus(tmp_path / "device") == []


def test_the_command_line_stores_and_reports_it(tmp_path, cli, rv32):
    """bench handshake --target end to end: its tables, --json, the store, and report DIR
    drawing the iotst views from the counted configuration."""
    import json

    out, document = tmp_path / "out", tmp_path / "counted.json"
    result = cli("bench", "handshake", "--target", rv32, "--profiles",
                 "plain,tls1.3/x25519/ecdsa-p256", "--reps", "2", "--out", str(out), "--json",
                 str(document), "--quiet")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Handshake counted on rv32imc" in result.stdout and "CERT_VERIFY" in result.stdout
    # the stack chosen for the user is said once the benchmark runs (a refusal: one line)
    assert result.stderr.count("note: --target counts the device client on mbedtls") == 1
    profiles = {p["profile"]: p for p in json.loads(document.read_text())["profiles"]}
    tls = profiles["tls1.3/x25519/ecdsa-p256"]
    assert tls["method"] == "counted on rv32imc" and len(tls["samples"]) == 2
    assert tls["device_model"]["method"] == "counted" and tls["device_model"]["cpi"] > 0
    for entry in tls["device_model"]["by_clock_and_cores"].values():  # the CPI's range
        ranged = entry["cpi_range"]
        assert ranged["low"] < entry["seconds"] < ranged["high"] and "CPI" in ranged["method"]
    assert tls["device_model"]["label"].startswith("counted on rv32imc")
    assert tls["group_order"][:2] == ["CLIENT_HELLO", "WAIT_SERVER_FLIGHT"]
    assert len(set(tls["seeds"])) == 2
    # Stored by the typed row builders: a counted run, every connection with its target,
    # seed and count (the --json's, to the instruction), its groups' instructions.
    from iotsecbench.store import read

    runs = read.runs_frame(out).set_index("configuration")
    assert set(runs["cost_method"]) == {"counted"} and runs["payload_bytes"].isna().all()
    connections = read.table(out, "handshake_connections")
    run_id = runs.loc["tls1.3/x25519/ecdsa-p256", "run_id"]
    own = connections[connections["run_id"] == run_id].sort_values("repetition")
    assert set(own["target"]) == {rv32} and list(own["seed_hex"]) == tls["seeds"]
    assert list(own["instructions"]) == [s["invariant_instructions"] for s in tls["samples"]]
    groups = read.table(out, "handshake_groups")
    connection = groups[(groups["run_id"] == run_id) & (groups["repetition"] == 0)]
    assert list(connection.sort_values("position")["group_name"])[:2] == tls["group_order"][:2]
    assert connection["instructions"].sum() == tls["samples"][0]["invariant_instructions"]
    report = run_cli_forked("report", str(out), timeout=300)  # forks: tests/cli_server.py
    assert report.returncode == 0, report.stderr
    for figure in ("iotst-cost", "iotst-groups", "iotst-ci-width"):
        assert (out / "report" / "figures" / f"{figure}.png").exists(), figure
    # export --timeline: the counted groups on the device's track, in the stored order, from
    # the first connection's start on the lab's clock (docs/exports.md)
    exported = run_cli_forked("export", str(out), "--timeline", "--out", str(tmp_path / "timeline"))
    assert exported.returncode == 0, exported.stderr
    trace = json.loads((tmp_path / "timeline" / "timeline.json").read_text())
    slices = [e for e in trace["traceEvents"] if e.get("cat") == "iotst"]
    counted_groups = [p["group_order"] for p in profiles.values()]
    assert [e["name"] for e in slices] == [name for order in counted_groups for name in order]
    rate = tls["device_time_s"]["clock_mhz"] * 1e6 / tls["device_model"]["cpi"]
    [first] = [e for e in slices if e["name"] == "CLIENT_HELLO"]  # TLS only
    client = tls["groups"]["CLIENT_HELLO"]["client"]["mean"]
    assert first["dur"] == pytest.approx(client / rate * 1e6, abs=1e-3)
    # export --format bencher: each profile's counted instructions and their interval over
    # the seeds, as stored, in Bencher's own format (docs/exports.md)
    exported = run_cli_forked(
        "export", str(out), "--format", "bencher", "--out", str(tmp_path / "ci")
    )
    assert exported.returncode == 0, exported.stderr
    metrics = json.loads((tmp_path / "ci" / "bencher.json").read_text())
    stored = tls["instructions"]["network_invariant"]
    [measure] = metrics["tls1.3/x25519/ecdsa-p256 [counted on rv32imc]"].values()
    assert measure == {"value": stored["mean"], "lower_value": stored["ci_low"],
                       "upper_value": stored["ci_high"]}  # fmt: skip
