"""TLS profiles: what to ask for, how to configure both ends, and what was actually negotiated.

One module per concern; the public names are re-exported here:

* ``profile``    — ``TlsProfile`` (the transport half of a security configuration), its
  validation and its short names (``parse_profile``);
* ``openssl``    — OpenSSL control through ``ctypes`` for what Python 3.11's ``ssl`` lacks;
* ``configure``  — the client ``ssl.SSLContext`` and the broker's mosquitto listener lines;
* ``observe``    — ``HandshakeObserver``: the negotiated parameters of a live connection;
* ``verify``     — ``verify_negotiated``: negotiated against requested;
* ``operations`` — the public-key and record operations the energy model prices.

docs/tls.md explains the profile options and the combinations refused before anything starts.
"""

from iotsecbench.security.tls.configure import (
    OPENSSL_GROUP_NAMES,
    SERVER_NAME,
    broker_openssl_config,
    client_context,
    client_groups,
    mosquitto_listener_lines,
    server_context,
)
from iotsecbench.security.tls.observe import (
    GROUP_NAMES,
    SIGNATURE_NAMES,
    HandshakeObserver,
    NegotiatedTls,
    key_type_of_der,
    recorder_problem,
    set_trace_marker,
)
from iotsecbench.security.tls.openssl import OpenSslContextControl, openssl_control
from iotsecbench.security.tls.operations import (
    expected_handshake_operations,
    expected_negotiation,
    handshake_operations,
    record_operations,
)
from iotsecbench.security.tls.profile import (
    CERTIFICATE_BITS,
    CERTIFICATE_TYPES,
    CHAIN_LENGTHS,
    DEFAULT_SECURITY_LEVEL,
    FFDHE_GROUPS,
    GROUP_ALIASES,
    GROUP_BITS,
    MODP_GROUPS,
    SECURITY_LEVEL_BITS,
    TLS12_DHE_GROUP,
    TLS13_SUITES,
    TLS_VERSIONS,
    TlsProfile,
    canonical_group,
    expand_tls12_ciphers,
    parse_profile,
)
from iotsecbench.security.tls.verify import verify_negotiated

__all__ = [
    "CERTIFICATE_BITS",
    "CERTIFICATE_TYPES",
    "CHAIN_LENGTHS",
    "DEFAULT_SECURITY_LEVEL",
    "FFDHE_GROUPS",
    "GROUP_ALIASES",
    "GROUP_BITS",
    "GROUP_NAMES",
    "MODP_GROUPS",
    "OPENSSL_GROUP_NAMES",
    "SECURITY_LEVEL_BITS",
    "SERVER_NAME",
    "SIGNATURE_NAMES",
    "TLS12_DHE_GROUP",
    "TLS13_SUITES",
    "TLS_VERSIONS",
    "HandshakeObserver",
    "NegotiatedTls",
    "OpenSslContextControl",
    "TlsProfile",
    "broker_openssl_config",
    "canonical_group",
    "client_context",
    "client_groups",
    "expand_tls12_ciphers",
    "expected_handshake_operations",
    "expected_negotiation",
    "handshake_operations",
    "key_type_of_der",
    "mosquitto_listener_lines",
    "openssl_control",
    "parse_profile",
    "record_operations",
    "recorder_problem",
    "server_context",
    "set_trace_marker",
    "verify_negotiated",
]
