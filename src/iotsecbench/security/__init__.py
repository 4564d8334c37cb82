"""Security configurations: TLS profiles, payload schemes, key establishment, properties.

Never touches the network; imports nothing from the project but ``iotsecbench.errors``.
"""

from iotsecbench.security.configuration import (
    SecurityConfiguration,
    configuration_names,
    resolve_configuration,
)
from iotsecbench.security.properties import Provenance, SecurityProperties
from iotsecbench.security.schemes import describe_schemes, get_scheme, scheme_names

__all__ = [
    "Provenance",
    "SecurityConfiguration",
    "SecurityProperties",
    "configuration_names",
    "describe_schemes",
    "get_scheme",
    "resolve_configuration",
    "scheme_names",
]
