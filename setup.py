"""Build hook for the optional C extensions; everything else is in pyproject.toml.

``iotsecbench.security.schemes._evp`` puts the wire framing of the OpenSSL AEADs into one C
call (why: the source's header and docs/schemes.md). It is optional: without a C compiler,
the Python headers or OpenSSL's (Debian: gcc libc6-dev python3-dev libssl-dev, which
scripts/setup.sh installs) the build goes on without it and those schemes run through pyca
``cryptography`` instead, which `iotsecbench doctor` and every result's provenance report.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "iotsecbench.security.schemes._evp",
            sources=["src/iotsecbench/security/schemes/_evp.c"],
            libraries=["crypto"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
        # The TLS handshake recorder (security/_tlsrecord.c): OpenSSL's msg_callback in C, so
        # observing a handshake no longer costs Python calls inside the timed handshake.
        # Optional too: without it tls.py falls back to Python's ssl _msg_callback.
        Extension(
            "iotsecbench.security._tlsrecord",
            sources=["src/iotsecbench/security/_tlsrecord.c"],
            libraries=["ssl", "crypto"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
        # Our lightweight ciphers (security/schemes/lwc/, plain C; _lightweight.c binds them):
        # PyPI has SPECK/SIMON only in pure Python and Ascon only as the v1.2 submission.
        # Optional: without it those schemes run the libraries' code and say so, or are not
        # offered (schemes/lightweight.py).
        Extension(
            "iotsecbench.security.schemes._lightweight",
            sources=[
                "src/iotsecbench/security/schemes/_lightweight.c",
                *(
                    f"src/iotsecbench/security/schemes/lwc/{name}.c"
                    for name in ("speck_simon", "ascon", "salsa20_blake2b", "aes")
                ),
            ],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
    ]
)
