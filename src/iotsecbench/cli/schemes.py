"""``iotsecbench schemes``: every payload scheme with its security properties."""

from __future__ import annotations

import json
from typing import Annotated

import typer


def schemes(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List payload schemes: what each protects, its key establishment and implementation.

    Combine a scheme with a transport as TRANSPORT+SCHEME, e.g. tls1.2+ecdh-p256-aes128-gcm;
    a bare scheme runs over plain MQTT, and `plain`, `tls1.2`, `tls1.3` are transport only.
    """
    from rich.console import Console
    from rich.table import Table

    from iotsecbench.security.schemes import describe_schemes

    described = describe_schemes()
    if as_json:
        typer.echo(json.dumps(described, indent=2))
        return

    def mark(flag: bool) -> str:
        return "yes" if flag else "[red]no[/]"

    # conf. = confidentiality, integ. = integrity, e2e = end to end through the broker,
    # PFS = forward secrecy, +B @256 = bytes added to a 256-byte payload.

    table = Table(
        title="Payload schemes (combine with a transport: plain, tls1.2, tls1.3)",
        title_justify="left",
        header_style="bold",
    )
    table.add_column("scheme", no_wrap=True)
    # Short headings keep the table readable in an 80-column terminal; --json has full names.
    for heading in (
        "key est.",
        "conf.",
        "integ.",
        "replay",
        "e2e",
        "PFS",
        "tag B",
        "+B @256",
        "implementation",
    ):
        table.add_column(heading)
    for entry in described:
        props = entry["properties"]
        provenance = entry["provenance"]
        table.add_row(
            entry["name"],
            entry.get("key_establishment") or "–",
            mark(props["confidentiality"]),
            mark(props["integrity"]),
            mark(props["replay_protection"]),
            mark(props["end_to_end"]),
            mark(props["forward_secrecy"]),
            str(props["tag_bytes"]),
            str(entry.get("overhead_bytes", "")),
            f"{provenance['library']} ({'native' if provenance['native'] else 'pure Py'})",
        )
    console = Console()
    console.print(table)
    for entry in described:
        for warning in entry["properties"].get("warnings", []):
            console.print(f"[yellow]warning[/] {entry['name']}: {warning}")


def register(app: typer.Typer) -> None:
    app.command()(schemes)
