"""The fleet agent's backend subscribers and connect pacing on a real mosquitto (a small
fleet, one run per configuration shared by the assertions): with --receivers backend no
receiver connects, a few backend subscriber connections take every device's messages and
each is still counted in its own device's records; with --max-connecting no more set-ups
than that are ever in flight, the others queue."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from iotsecbench.agents.native import fleet
from tests.conftest import query

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DEVICES = 30
PLACES = 4  # --max-connecting: two per fleet process on two cores, four on one
# At 50 Hz a backend subscriber serves 10 devices (backend_devices), so a fleet process holds
# several, each subscribed to its own stride of the devices; a broker queue of 40 per client
# would drop what QoS 1 backends could not take in time (BACKEND_QOS 0: nothing is dropped).
SPEC = """
name = "backend"
configurations = ["plain", "tls1.2"]
rate_hz = [50.0]
duration_s = 2.0
repetitions = 1
seed = 5
[broker]
max_queued_messages = 40
"""


@pytest.fixture(scope="module")
def backend_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("backend")
    spec, out = directory / "backend.toml", directory / "fleet"
    spec.write_text(SPEC)
    result = subprocess.run(
        [sys.executable, "-m", "iotsecbench", "run", str(spec), "--devices", str(DEVICES),
         "--receivers", "backend", "--max-connecting", str(PLACES), "--out", str(out),
         "--quiet", "--no-report"],
        capture_output=True, text=True, check=False, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_backend_subscribers_account_for_every_message_of_every_device(
    mosquitto: str, backend_fleet: Path
) -> None:
    per_device = query(
        backend_fleet,
        "select r.configuration, count(*), min(f.messages_sent), max(f.messages_sent), "
        "sum(f.messages_delivered), sum(f.messages_lost), sum(f.duplicates) "
        "from fleet_devices f join runs r using (run_id) group by 1 order by 1",
    )
    sent = DEVICES * 100  # 2 s at 50 Hz
    assert per_device == [
        ("plain", DEVICES, 100, 100, sent, 0, 0),
        ("tls1.2", DEVICES, 100, 100, sent, 0, 0),
    ]
    # no receiver connected: no receiver handshake, and the broker saw the devices' emitters
    # and one backend subscriber per fleet process, nothing else of the fleet
    assert query(backend_fleet, "select count(*) from handshakes where agent = 'receiver'") == [
        (0,)
    ]
    for run_dir in sorted((backend_fleet / "runs").iterdir()):
        log = (run_dir / "broker" / "mosquitto.log").read_text()
        connected = [line for line in log.splitlines() if "New client connected" in line]
        assert sum(" as iotsb-emitter-" in line for line in connected) == DEVICES
        assert not any(" as iotsb-receiver-" in line for line in connected)
        assert "Outgoing messages are being dropped" not in log
        shares = [json.loads(p.read_text()) for p in sorted(run_dir.glob("fleet-?.json"))]
        assert len(shares) == fleet.processes(DEVICES)
        backends = sum(math.ceil(len(share["devices"]) / 10) for share in shares)
        assert backends == sum(len(share["backends"]) for share in shares) >= 3
        assert sum(" as iotsb-backend-" in line for line in connected) == backends
        # the backend's password leaves the file after the run
        assert all(b["password"] == "" for share in shares for b in share["backends"])


def test_pacing_never_has_more_set_ups_in_flight_than_allowed(
    mosquitto: str, backend_fleet: Path
) -> None:
    spans = query(
        backend_fleet,
        "select run_id, device_index, min(t_start_ns), max(t_end_ns), "
        "max(cast(json_extract(detail_json, '$.queued_ns') as bigint)) from handshakes "
        "where agent = 'emitter' group by 1, 2",
    )
    assert len(spans) == 2 * DEVICES
    for run_id in {span[0] for span in spans}:
        edges = sorted(
            (t, step)
            for _, _, start, end, _ in (s for s in spans if s[0] == run_id)
            for t, step in ((start, 1), (end, -1))
        )
        in_flight = peak = 0
        for _, step in edges:
            in_flight += step
            peak = max(peak, in_flight)
        assert peak <= PLACES, run_id
    # all 30 were due at once: most waited for a place
    assert sum(1 for span in spans if span[4] > 0) >= 2 * (DEVICES - PLACES)


def test_a_paced_storm_reconnects_every_device_and_loses_nothing(
    mosquitto: str, tmp_path: Path
) -> None:
    """Full handshakes one per fleet process at a time while the devices' 50 Hz timers run:
    an emitter waiting for its place must not publish on the socket its cut closed."""
    out = tmp_path / "storm"
    result = subprocess.run(
        [sys.executable, "-m", "iotsecbench", "run", "--configs", "tls1.2", "--devices", "16",
         "--duration", "3", "--rate", "50", "--storm-at", "1.5", "--max-connecting", "1",
         "--receivers", "backend", "--reps", "1", "--out", str(out), "--quiet", "--no-report"],
        capture_output=True, text=True, check=False, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert query(
        out,
        "select status, messages_sent, messages_delivered, messages_lost from runs",
    ) == [("ok", 16 * 150, 16 * 150, 0)]
    assert query(out, "select sum(reconnections), sum(reconnect_resumed) from fleet_devices") == [
        (16, 0)
    ]
