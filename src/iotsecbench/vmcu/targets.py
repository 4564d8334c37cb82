"""The virtual microcontrollers: one Debian cross toolchain with picolibc and one QEMU machine
per instruction set, each standing for a device the studies use (docs/virtual-mcu.md).

* ``rv32imc`` — the ESP32-C3's instruction set. Objects are compiled for RV32IMC; picolibc and
  libgcc come from the nearest multilib Debian ships (rv32imac: the same code plus atomics the
  C library's start-up may use). QEMU's ``virt`` board, ``-cpu rv32``.
* ``cortex-m4`` — the nRF52840's core (ARMv7E-M, Thumb-2, soft float as the crypto needs no
  FPU). QEMU's ``netduinoplus2`` (an STM32F405 Cortex-M4), whose 1 GHz timer is the counter.

Memory follows the device where QEMU's board allows: the nRF52840 has 256 KiB of RAM, the QEMU
board 192 KiB, which is what the Cortex-M4 build gets.
"""

from __future__ import annotations

from dataclasses import dataclass

from iotsecbench.errors import SpecError

COMMON_CFLAGS = (
    "-O2",
    "-std=gnu11",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-ffunction-sections",  # with picolibc's --gc-sections: only what a primitive calls is linked
    "-fdata-sections",
    "--specs=picolibc.specs",
)
QEMU_COMMON = ("-nographic", "-monitor", "none", "-semihosting-config", "enable=on,target=native")
ICOUNT = ("-icount", "shift=0")  # one nanosecond of virtual time per instruction


@dataclass(frozen=True)
class Target:
    name: str
    device: str  # the device whose instruction set this is
    prefix: str  # the cross toolchain's prefix
    compile_flags: tuple[str, ...]
    link_flags: tuple[str, ...]  # picks picolibc's multilib
    flash: int
    flash_size: int
    ram: int
    ram_size: int
    stack_size: int
    qemu: tuple[str, ...]
    packages: tuple[str, ...]  # Debian packages with the toolchain, picolibc and QEMU
    counter: str  # what counts instructions (docs/virtual-mcu.md)
    profile: str  # the device profile (energy/profiles) with its clock and CPI
    # Virtual devices (run --target --devices N) one host core keeps at real time: measured
    # at 10 Hz, TLS 1.2, 1 KiB, QoS 1 on the 2-core VM under others' load (docs/device-
    # client.md, "Fleets of virtual devices"); a fleet above cores x this is refused.
    fleet_per_core: int

    @property
    def compiler(self) -> str:
        return f"{self.prefix}-gcc"

    def linker_script(self) -> str:
        """This board's memory map, then picolibc's own script. (As ``--defsym``s they come
        after picolibc.ld on the command line, and its ``DEFINED(__stack_size)`` does not see
        them: the stack stayed at its 2 KiB default.)"""
        values = {
            "__flash": self.flash,
            "__flash_size": self.flash_size,
            "__ram": self.ram,
            "__ram_size": self.ram_size,
            "__stack_size": self.stack_size,
        }
        lines = [f"{name} = {value:#x};" for name, value in values.items()]
        return "\n".join([*lines, "INCLUDE picolibc.ld", ""])

    def qemu_command(self, firmware: str) -> list[str]:
        return [*self.qemu, *QEMU_COMMON, *ICOUNT, "-kernel", firmware]


TARGETS = {
    "rv32imc": Target(
        name="rv32imc",
        device="ESP32-C3",
        prefix="riscv64-unknown-elf",
        compile_flags=("-march=rv32imc_zicsr", "-mabi=ilp32"),
        link_flags=("-march=rv32imac", "-mabi=ilp32"),
        flash=0x8000_0000,
        flash_size=0x40_0000,
        ram=0x8040_0000,
        ram_size=0x5_0000,  # 320 KiB: the ESP32-C3's data RAM less what its ROM keeps
        stack_size=0x8000,  # 3x the deepest call counted (ML-DSA signing, ~11 KiB)
        qemu=("qemu-system-riscv32", "-M", "virt", "-cpu", "rv32", "-bios", "none"),
        packages=("gcc-riscv64-unknown-elf", "picolibc-riscv64-unknown-elf", "qemu-system-misc"),
        counter="minstret under -icount shift=0",
        profile="esp32-c3",
        fleet_per_core=6,  # 12 devices kept 10 Hz, 16 fell to 9.47 Hz
    ),
    "cortex-m4": Target(
        name="cortex-m4",
        device="nRF52840",
        prefix="arm-none-eabi",
        compile_flags=("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft"),
        link_flags=("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft"),
        flash=0x0800_0000,
        flash_size=0x10_0000,
        ram=0x2000_0000,
        ram_size=0x3_0000,  # 192 KiB: all the STM32F405 board has (the nRF52840: 256 KiB)
        stack_size=0x8000,  # 3x the deepest call counted (ML-DSA signing, ~11 KiB)
        qemu=("qemu-system-arm", "-M", "netduinoplus2"),
        packages=("gcc-arm-none-eabi", "picolibc-arm-none-eabi", "qemu-system-arm"),
        counter="STM32 TIM2 at 1 GHz of virtual time under -icount shift=0",
        profile="nrf52840",
        fleet_per_core=2,  # 4 kept 10 Hz (once 9.73 Hz under a load of 20), 8 did not
    ),
}


def target(name: str) -> Target:
    """The target called ``name``; a usage error naming the choices otherwise."""
    try:
        return TARGETS[name]
    except KeyError:
        raise SpecError(f"unknown target {name!r}: choose one of {', '.join(TARGETS)}") from None
