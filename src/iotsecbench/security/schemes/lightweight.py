"""Our C lightweight ciphers (``_lightweight.c``: SPECK128, SIMON128, Ascon-AEAD128, Salsa20 +
BLAKE2b, table-free AES), or None where the optional extension was not built (setup.py): one
place that knows, for the schemes (etm.py, ascon.py), the catalog and ``doctor``."""

from __future__ import annotations

from types import ModuleType

try:
    from iotsecbench.security.schemes import _lightweight as _built

    C: ModuleType | None = _built
except ImportError:  # a machine without a C compiler: the schemes say what runs instead
    C = None

AVAILABLE = C is not None
