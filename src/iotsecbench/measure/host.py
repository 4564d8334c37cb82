"""What every result depends on besides its inputs: the host and the software versions.

The one collector of this metadata: ``run``, ``bench crypto`` and ``bench handshake`` store
``host_facts()`` and ``software_versions()`` with every result, so two figures can be told
apart by the machine and libraries that produced them.
"""

from __future__ import annotations

import os
import platform
import socket
import ssl
from importlib.metadata import PackageNotFoundError, version

from iotsecbench import __version__

# Python packages whose version can change a measured figure.
MEASURED_PACKAGES = ("paho-mqtt", "cryptography", "duckdb", "numpy")


def host_facts() -> dict[str, object]:
    """The machine and interpreter: name, platform, CPUs (and which ones this process may use)."""
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": sorted(os.sched_getaffinity(0)),  # [n]: pinned (`--cpu n`)
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
    }


def software_versions(broker_version: str | None = None) -> dict[str, str]:
    """iotsecbench, the broker (when one ran), both OpenSSL builds in use and the packages."""
    from cryptography.hazmat.backends.openssl import backend

    versions = {"iotsecbench": __version__}
    if broker_version is not None:
        versions["mosquitto"] = broker_version
    versions["openssl"] = ssl.OPENSSL_VERSION  # Python's ssl: TLS, the broker's clients
    versions["pyca_openssl"] = backend.openssl_version_text()  # cryptography: payload schemes
    for package in MEASURED_PACKAGES:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = "not installed"
    return versions
