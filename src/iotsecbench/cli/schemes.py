"""``iotsecbench schemes``: every payload scheme with its security properties."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from iotsecbench.cli import output_console


def _mark(flag: bool) -> str:
    return "yes" if flag else "[red]no[/]"


def _implementation(provenance: dict) -> str:
    return f"{provenance['library']} ({'native' if provenance['native'] else 'pure Py'})"


def schemes(
    as_json: Annotated[
        bool, typer.Option("--json", help="Machine-readable output: every scheme.")
    ] = False,
    show_all: Annotated[
        bool,
        typer.Option("--all", help="One row per scheme (every key establishment x cipher)."),
    ] = False,
) -> None:
    """List payload schemes: what each protects, its key establishment and implementation.

    A scheme is KEY-ESTABLISHMENT-CIPHER, e.g. x25519-chacha20-poly1305 or psk-aes128-gcm
    (docs/schemes.md). Combine it with a transport as TRANSPORT+SCHEME, e.g.
    tls1.2+ecdh-p256-aes128-gcm; a bare scheme runs over plain MQTT, and `plain`, `tls1.2`,
    `tls1.3` are transport only. Without --all the table shows one row per cipher and a
    second table the key establishments, which combine freely.
    """
    from rich.table import Table

    from iotsecbench.security.schemes import describe_schemes
    from iotsecbench.security.schemes.catalog import (
        CIPHERS,
        KEY_ESTABLISHMENTS,
        SIGNABLE,
        SIGNATURES,
    )

    described = describe_schemes()
    if as_json:
        typer.echo(json.dumps(described, indent=2))
        return
    console = output_console()
    # Short headings keep the tables readable in an 80-column terminal; --json has full names.
    # conf. = confidentiality, integ. = integrity, e2e = end to end through the broker,
    # PFS = forward secrecy, +B @256 = bytes added to a 256-byte payload.
    if show_all:
        table = Table(
            title="Payload schemes (combine with a transport: plain, tls1.2, tls1.3)",
            title_justify="left",
            header_style="bold",
        )
        table.add_column("scheme", no_wrap=True)
        for heading in ("conf.", "integ.", "replay", "e2e", "PFS", "tag B", "+B @256", "impl."):
            table.add_column(heading)
        for entry in described:
            props = entry["properties"]
            table.add_row(
                entry["name"],
                _mark(props["confidentiality"]),
                _mark(props["integrity"]),
                _mark(props["replay_protection"]),
                _mark(props["end_to_end"]),
                _mark(props["forward_secrecy"]),
                str(props["tag_bytes"]),
                str(entry.get("overhead_bytes", "")),
                _implementation(entry["provenance"]),
            )
        console.print(table)
        warned: dict[str, list[str]] = {}
        for entry in described:
            for warning in entry["properties"].get("warnings", []):
                warned.setdefault(warning, []).append(entry["name"])
        for warning, names in warned.items():
            subject = names[0] if len(names) == 1 else f"{len(names)} schemes"
            console.print(f"[yellow]warning[/] {subject}: {warning}")
        return

    ciphers: dict[str, dict] = {}
    for entry in described:
        if entry["cipher"] and entry["cipher"] not in ciphers:
            ciphers[entry["cipher"]] = entry
    table = Table(
        title="Ciphers (wire formats): use as KEY-ESTABLISHMENT-CIPHER, e.g. psk-aes128-gcm",
        title_justify="left",
        header_style="bold",
    )
    table.add_column("cipher", no_wrap=True)
    for heading in ("key bits", "integ.", "replay", "tag B", "+B @256", "implementation"):
        table.add_column(heading)
    for cipher, entry in ciphers.items():
        props = entry["properties"]
        table.add_row(
            cipher,
            str(entry["key_bits"]),
            _mark(props["integrity"]),
            _mark(props["replay_protection"]),
            str(props["tag_bytes"]),
            str(entry["overhead_bytes"]),
            _implementation(entry["provenance"]),
        )
    console.print(table)
    kx_table = Table(
        title="Key establishments (each then HKDF-SHA256 per direction and purpose)",
        title_justify="left",
        header_style="bold",
    )
    kx_table.add_column("key establishment", no_wrap=True)
    kx_table.add_column("PFS")
    kx_table.add_column("PQ")
    kx_table.add_column("what it does")
    for info in KEY_ESTABLISHMENTS.values():
        if "-" in info.name and info.name.rpartition("-")[2] in SIGNATURES:
            continue  # the signed variants: one line below
        kx_table.add_row(
            info.name, _mark(info.forward_secrecy), _mark(info.post_quantum), info.summary
        )
    console.print(kx_table)
    suites = ", ".join(
        f"{s.name}{' (post-quantum)' if s.post_quantum else ''}" for s in SIGNATURES.values()
    )
    console.print(
        f"Signed key establishments, AGREEMENT-SIGNATURE (e.g. x25519mlkem768-mldsa44): "
        f"{', '.join(SIGNABLE)} with {suites}; both ends sign the exchange with keys pinned per "
        "run (docs/post-quantum.md)."
    )
    console.print(
        f"{len(described) - 1} schemes; every scheme is end to end through the broker. "
        "`iotsecbench schemes --all` lists each one, `--json` with full properties."
    )
    warned: dict[str, list[str]] = {}
    for cipher_class in CIPHERS:
        for warning in cipher_class.cipher_warnings:
            warned.setdefault(warning, []).append(cipher_class.cipher)
    for info in KEY_ESTABLISHMENTS.values():
        for warning in info.warnings:
            warned.setdefault(warning, []).append(info.name)
    for warning, names in warned.items():
        subject = ", ".join(names) if len(names) <= 4 else f"{names[0]} and {len(names) - 1} more"
        console.print(f"[yellow]warning[/] {subject}: {warning}")


def register(app: typer.Typer) -> None:
    app.command()(schemes)
