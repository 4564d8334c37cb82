"""``iotsecbench bench device-costs``: a device profile's crypto prices, counted."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from iotsecbench.cli import output_console


def device_costs(
    target: Annotated[
        str,
        typer.Option(
            help="The virtual microcontroller: rv32imc (ESP32-C3) or cortex-m4 (nRF52840)."
        ),
    ],
    profile: Annotated[
        str,
        typer.Option(
            help="The device profile to start from: a shipped name (esp32-c3, nrf52840, "
            "esp32-wroom-32) or a .toml path. Its clock turns counts into time; its other "
            "numbers are kept."
        ),
    ],
    out: Annotated[Path, typer.Option(help="Where to write the counted profile (.toml).")],
    replace_guesses: Annotated[
        bool,
        typer.Option(
            "--replace-guesses",
            help="For a device of another instruction set (esp32-wroom-32, an Xtensa): only "
            "replace its guessed prices of software-only primitives (ChaCha20, Salsa20, "
            "BLAKE2b, Ascon, SPECK, SIMON, table-free AES) and operations (ML-KEM, ML-DSA, "
            "Ed25519) with the counts, as `derived`, editing PROFILE's file in place of its "
            "tables (comments kept).",
        ),
    ] = False,
) -> None:
    """Count every crypto primitive the virtual-MCU firmware runs on TARGET and write PROFILE
    with those prices: status `counted`, each with the code counted, the build's hash and this
    command; primitives sharing that code are `derived` from the counts; the rest kept. This is
    how the shipped esp32-c3 and nrf52840 profiles are made (docs/virtual-mcu.md)."""
    from iotsecbench.bench.device_costs import counted_profile
    from iotsecbench.energy.calibrate import profile_toml
    from iotsecbench.energy.profile import load_profile, profile_text
    from iotsecbench.files import check_output_file, write_atomic
    from iotsecbench.vmcu import target as find_target

    check_output_file(out, "--out")
    chosen = find_target(target)
    base = load_profile(profile)
    console = output_console()
    if replace_guesses:
        from iotsecbench.bench.device_costs import borrowed_guesses
        from iotsecbench.energy.calibrate import rewrite_parameters

        with console.status(f"counting the software-only primitives on {chosen.name}…"):
            updates = borrowed_guesses(base, chosen)
        write_atomic(out, rewrite_parameters(profile_text(profile), updates))
        console.print(f"wrote {out}: {len(updates)} guessed prices replaced by counts")
        return
    with console.status(f"counting every primitive on {chosen.name}…"):
        counted = counted_profile(base, chosen)
    header = (
        f"Device profile {counted.name}: {counted.description}\n"
        f"Crypto prices counted on the virtual {chosen.name} ({chosen.device}'s instruction set)\n"
        f"by `iotsecbench bench device-costs --target {chosen.name} --profile {base.name}`;\n"
        "rerun it to regenerate them. Statuses: datasheet, measured, derived, guess,\n"
        "calibrated, counted (docs/energy-model.md, docs/virtual-mcu.md)."
    )
    write_atomic(out, profile_toml(counted, header) + "\n")
    statuses = [
        p.status for cost in counted.primitives.values() for p in cost.parameters().values()
    ]
    console.print(
        f"wrote {out}: {statuses.count('counted')} counted, {statuses.count('derived')} derived, "
        f"{statuses.count('guess')} guessed crypto prices"
    )


def register(bench_app: typer.Typer) -> None:
    bench_app.command(name="device-costs")(device_costs)
