"""TCP_INFO counters against known truth on real loopback connections, and against ``ss -ti``.

Known truth: we send exactly N payload bytes one way and M the other, so the kernel must report
``bytes_sent``/``bytes_received`` equal to N and M on the right ends, and ``bytes_acked`` equal
to them too — plus one on the connecting side, whose SYN occupies one byte of sequence space.
"""

from __future__ import annotations

import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iotsecbench.lab.pki import create_certificates
from iotsecbench.measure.tcpinfo import TcpInfo, read_tcp_info

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_INFO"), reason="needs Linux TCP_INFO")

N_CLIENT_TO_SERVER_BYTES = 300_000
M_SERVER_TO_CLIENT_BYTES = 12_345


def _receive_exactly(sock: socket.socket, count: int) -> None:
    remaining = count
    while remaining:
        chunk = sock.recv(min(remaining, 65536))
        assert chunk, "peer closed early"
        remaining -= len(chunk)


def _settled(sock: socket.socket) -> TcpInfo:
    """Read TCP_INFO once every sent byte is acknowledged (loopback: within milliseconds)."""
    deadline = time.monotonic() + 2.0
    while True:
        info = read_tcp_info(sock)
        assert info is not None
        if (info.unacked == 0 and info.notsent_bytes == 0) or time.monotonic() > deadline:
            return info
        time.sleep(0.005)


@pytest.fixture
def connection() -> Iterator[tuple[socket.socket, socket.socket]]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
    with client, accepted:
        yield client, accepted


def test_byte_counters_equal_the_bytes_exchanged(
    connection: tuple[socket.socket, socket.socket],
) -> None:
    client, server = connection
    client.sendall(b"c" * N_CLIENT_TO_SERVER_BYTES)
    _receive_exactly(server, N_CLIENT_TO_SERVER_BYTES)
    server.sendall(b"s" * M_SERVER_TO_CLIENT_BYTES)
    _receive_exactly(client, M_SERVER_TO_CLIENT_BYTES)
    client_info, server_info = _settled(client), _settled(server)

    assert client_info.state_name == server_info.state_name == "ESTABLISHED"
    assert client_info.bytes_sent == N_CLIENT_TO_SERVER_BYTES  # no loss on loopback
    assert client_info.bytes_acked == N_CLIENT_TO_SERVER_BYTES + 1  # + the SYN
    assert server_info.bytes_received == N_CLIENT_TO_SERVER_BYTES
    assert server_info.bytes_sent == M_SERVER_TO_CLIENT_BYTES
    assert server_info.bytes_acked == M_SERVER_TO_CLIENT_BYTES  # passive side: SYN not counted
    assert client_info.bytes_received == M_SERVER_TO_CLIENT_BYTES
    assert client_info.total_retrans == server_info.total_retrans == 0
    assert client_info.bytes_retrans == 0

    # Segment counts: every payload segment carries at most one MSS; all segments are counted
    # on both ends (loopback loses nothing), ACK-only segments included in segs_*.
    mss = client_info.snd_mss_bytes
    assert mss > 0
    assert client_info.data_segs_out >= -(-N_CLIENT_TO_SERVER_BYTES // mss)
    assert client_info.data_segs_out == server_info.data_segs_in
    assert server_info.data_segs_out == client_info.data_segs_in >= 1
    assert client_info.segs_out >= client_info.data_segs_out
    # The accepted socket starts with the SYN in segs_in, but its SYN-ACK was sent by the
    # listener's request socket and is missing from its segs_out.
    assert client_info.segs_out == server_info.segs_in
    assert server_info.segs_out + 1 == client_info.segs_in
    assert client_info.rtt_us > 0 and client_info.min_rtt_us <= client_info.rtt_us


def _ss_fields(local_port: int) -> dict[str, str]:
    output = subprocess.run(
        ["ss", "-tinH", "state", "established", "src", f"127.0.0.1:{local_port}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    ).stdout
    return dict(re.findall(r"(\w+):(\S+)", output))


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("ss") is None, reason="iproute2 `ss` not installed")
def test_counters_and_rtt_agree_with_ss(connection: tuple[socket.socket, socket.socket]) -> None:
    client, server = connection
    for _ in range(20):  # a few round trips so the RTT estimate has samples
        client.sendall(b"p" * 100)
        _receive_exactly(server, 100)
        server.sendall(b"q" * 50)
        _receive_exactly(client, 50)
    before = _settled(client)
    reported = _ss_fields(client.getsockname()[1])
    after = _settled(client)
    assert reported, "ss did not list the connection"

    # The connection is idle, so the counters cannot move between our reads and ss's.
    assert before.bytes_sent == after.bytes_sent == int(reported["bytes_sent"])
    assert after.bytes_acked == int(reported["bytes_acked"])
    assert after.bytes_received == int(reported["bytes_received"])
    assert after.segs_out == int(reported["segs_out"])
    assert after.segs_in == int(reported["segs_in"])
    assert after.data_segs_out == int(reported["data_segs_out"])
    # ss prints "rtt:<srtt ms>/<rttvar ms>" with µs resolution; an idle connection's estimate
    # does not change without new ACKs, so ours brackets it.
    rtt_ms, rttvar_ms = (float(part) for part in reported["rtt"].split("/"))
    low = min(before.rtt_us, after.rtt_us)
    high = max(before.rtt_us, after.rtt_us)
    assert low - 1 <= round(rtt_ms * 1000) <= high + 1
    assert abs(round(rttvar_ms * 1000) - after.rttvar_us) <= max(1, after.rttvar_us // 2)
    assert int(reported["cwnd"]) == after.snd_cwnd


def test_tls_socket_reports_record_bytes_of_the_underlying_tcp_connection(tmp_path: Path) -> None:
    certificates = create_certificates(tmp_path, "ecdsa-p256")  # the lab's own PKI
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(certificates.server_cert, certificates.server_key)
    client_context = ssl.create_default_context(cafile=str(certificates.ca_file))
    payload_bytes = 50_000
    server_side: dict[str, TcpInfo | None] = {}
    client_has_read = threading.Event()

    with socket.create_server(("127.0.0.1", 0)) as listener:

        def serve() -> None:
            raw, _ = listener.accept()
            with server_context.wrap_socket(raw, server_side=True) as tls:
                received = 0
                while received < payload_bytes:
                    received += len(tls.recv(65536))
                tls.sendall(b"k")
                server_side["info"] = _settled(tls)
                # Stay open until the client has read: a FIN would add 1 to its bytes_received.
                client_has_read.wait(timeout=10)

        thread = threading.Thread(target=serve)
        thread.start()
        raw_client = socket.create_connection(listener.getsockname())
        with client_context.wrap_socket(raw_client, server_hostname="localhost") as tls_client:
            assert isinstance(tls_client, socket.socket)
            tls_client.sendall(b"t" * payload_bytes)
            assert tls_client.recv(1) == b"k"
            client_info = _settled(tls_client)
            client_has_read.set()
            thread.join(timeout=10)
    server_info = server_side["info"]
    assert client_info is not None and server_info is not None
    # Ciphertext + handshake + record overhead: more than the payload, and both ends agree.
    assert client_info.bytes_sent > payload_bytes
    assert server_info.bytes_received == client_info.bytes_sent
    assert client_info.bytes_received == server_info.bytes_sent
    assert read_tcp_info(tls_client) is None  # closed now
