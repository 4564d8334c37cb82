"""Security configurations: TLS profiles, payload schemes, key establishment, properties.

Never touches the network; imports nothing from the project but ``iotsecbench.errors``.
The names below load their module on first use (PEP 562), so a command that only lists
schemes does not pay for the TLS machinery (``ssl``, ``ctypes``) it never touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_HOME = {
    "SecurityConfiguration": "configuration",
    "configuration_names": "configuration",
    "resolve_configuration": "configuration",
    "Provenance": "properties",
    "SecurityProperties": "properties",
    "describe_schemes": "schemes",
    "get_scheme": "schemes",
    "scheme_names": "schemes",
}

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

if TYPE_CHECKING:
    from iotsecbench.security.configuration import (
        SecurityConfiguration,
        configuration_names,
        resolve_configuration,
    )
    from iotsecbench.security.properties import Provenance, SecurityProperties
    from iotsecbench.security.schemes import describe_schemes, get_scheme, scheme_names


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value  # later lookups skip this function
    return value
