#!/usr/bin/env bash
# Installs what iotsecbench needs on a Debian machine, then the package into ./.venv.
#   scripts/setup.sh          mosquitto + Python dependencies (to run experiments)
#   scripts/setup.sh --dev    also the test tools (pytest, hypothesis, ruff, Chromium, and the
#                             cross toolchains and QEMU of the virtual microcontrollers)
# Needs root or sudo for apt-get; safe to run again (only missing packages are installed).
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--dev" ] && extras="[dev]"

packages=(mosquitto mosquitto-clients python3-venv python3-pip iproute2 nftables ethtool)
# To build the C extension that seals AES-GCM/CCM and ChaCha20-Poly1305 through OpenSSL's EVP
# (setup.py; without these the install goes on and those schemes run through pyca).
packages+=(gcc libc6-dev python3-dev libssl-dev)
# The native device agent (src/iotsecbench/agents/native): the MQTT client in C on Debian's
# device TLS stacks, and on wolfSSL 5.9.4 built from the crates.io wolfssl-sys crate into
# ~/.cache/iotsecbench (stack wolfssl-5.9: ML-KEM and ML-DSA; once, about a minute), built
# below; `size`, `ar` and `objcopy` come with binutils.
packages+=(binutils libcjson-dev libmbedtls-dev libwolfssl-dev)
# Post-quantum TLS (stack openssl-3.5) and ML-KEM-512: OpenSSL 3.5.5 built from the crates.io
# openssl-src crate into ~/.cache/iotsecbench (once, about 5 minutes on two cores).
packages+=(make perl)
# The report's browser test drives Debian's Chromium (never a downloaded browser); the
# virtual-MCU tests (`bench crypto --target`) cross-compile for RV32IMC and Cortex-M4 with
# picolibc and count instructions under QEMU.
[ -n "$extras" ] && packages+=(chromium fonts-dejavu-core
  gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc
  gcc-arm-none-eabi picolibc-arm-none-eabi qemu-system-arm)
# `run --capture` (docs/capture.md) takes its captures with dumpcap and writes them with
# editcap (wireshark-common); its tests read them with tshark. Without it, --capture is
# refused (exit 3) and nothing else changes.
[ -n "$extras" ] && packages+=(tshark)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  # wireshark-common asks whether non-root users may capture: no (root captures; others
  # opt in with `dpkg-reconfigure wireshark-common`). Answered here so the install never waits.
  echo "wireshark-common wireshark-common/install-setuid boolean false" \
    | $sudo debconf-set-selections 2>/dev/null || true
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".${extras}"
.venv/bin/python -c "from iotsecbench.security.schemes import evp; evp.AVAILABLE or print('setup: warning:', evp.MISSING_REASON)"
.venv/bin/python -m iotsecbench.agents.native \
  || echo "setup: warning: the native stacks named above (--stack mbedtls/wolfssl/wolfssl-5.9) will be refused"
.venv/bin/python -m iotsecbench.security.pq_openssl >/dev/null \
  || echo "setup: warning: post-quantum TLS (--stack openssl-3.5) and ML-KEM-512 will be refused"
# The device client firmware (`bench handshake --target`, docs/device-client.md): its images for
# both targets and the seeded random generator of its brokers, built once into the cache
# (about five minutes on two cores the first time).
[ -n "$extras" ] && { .venv/bin/python -m iotsecbench.lab.seeded_rand \
  && .venv/bin/python -m iotsecbench.vmcu.client \
  || echo "setup: warning: bench handshake --target will be refused"; }
echo "setup: ready ($(.venv/bin/iotsecbench --help >/dev/null && echo 'iotsecbench installed'))"
