"""Build hook for the one C extension; everything else is in pyproject.toml.

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
        )
    ]
)
