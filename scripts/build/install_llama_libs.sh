#!/usr/bin/env bash
# scripts/build/install_llama_libs.sh [PYTHON] [PREFIX]
#
# Put the llama.cpp shared libraries that scripts/build/build_llama_server.sh
# built (PREFIX/bin/lib*.so, default .cache/llama-server) into the installed
# llama_cpp package's lib/ folder, where its ctypes loader looks for them.
#
# Why: scripts/test.sh installs llama-cpp-python with CMAKE_ARGS=-DLLAMA_BUILD=OFF
# (its wheel then carries the Python bindings only, no compile), so llama.cpp is
# compiled once for both the bindings and llama-server. The libraries come from
# the same vendor/llama.cpp the bindings were released with (the 0.3.36 sdist).
#
#   PYTHON   interpreter whose llama_cpp receives them (default .venv/bin/python)
#
# Ends with a real load of both libraries (llama and mtmd) and fails if either
# does not load.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 0
fi
PYTHON="${1:-$ROOT/.venv/bin/python}"
PREFIX="${2:-$ROOT/.cache/llama-server}"

shopt -s nullglob
libs=("$PREFIX"/bin/lib*.so*)
if [[ ${#libs[@]} -eq 0 ]]; then
    echo "install_llama_libs: no lib*.so in $PREFIX/bin: run scripts/build/build_llama_server.sh first" >&2
    exit 1
fi
# find_spec does not run the package (which would try to load the missing libraries).
PKG="$("$PYTHON" -c 'import importlib.util, os; s = importlib.util.find_spec("llama_cpp"); print(os.path.dirname(s.origin)) if s else None' 2>/dev/null || true)"
if [[ -z "$PKG" || "$PKG" == "None" ]]; then
    echo "install_llama_libs: llama_cpp is not installed for $PYTHON" >&2
    exit 1
fi
mkdir -p "$PKG/lib"
cp -P "${libs[@]}" "$PKG/lib/"
"$PYTHON" -c 'import llama_cpp, llama_cpp.mtmd_cpp; print("llama_cpp", llama_cpp.__version__, "loads", llama_cpp.llama_cpp._lib._name)'
