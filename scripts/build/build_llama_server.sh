#!/usr/bin/env bash
# scripts/build/build_llama_server.sh [PREFIX]
#
# Build llama.cpp ONCE from the vendor/llama.cpp inside the llama-cpp-python
# 0.3.36 source distribution: the C++ `llama-server` (slots, cache_prompt,
# --parallel, --image-min-tokens ...; the Python package does not ship it) and
# the shared libraries the Python bindings load (libllama, libggml*, libmtmd).
# scripts/test.sh then installs the bindings without compiling them
# (CMAKE_ARGS=-DLLAMA_BUILD=OFF) and copies these libraries into the package
# (scripts/build/install_llama_libs.sh), so the bindings and the server are the
# same build and CI compiles llama.cpp once instead of twice.
#
#   PREFIX   where to put it (default: .cache/llama-server, git-ignored)
#            -> PREFIX/bin/llama-server and PREFIX/bin/lib*.so (RPATH $ORIGIN:
#               the folder moves as a whole)
#               PREFIX/build/             (cmake build tree, reused by rebuilds)
#
# Skips everything when PREFIX/bin/llama-server and PREFIX/bin/libllama.so
# already exist (delete them, or set FORCE=1, to rebuild). Prints the binary's
# path as the last line.
#
# Offline: the sdist is fetched by scripts/build/fetch_llama_sdist.sh (pip cache);
# the build downloads nothing (no prebuilt web UI, no OpenSSL/HTTPS model
# downloads). Portable CPU build (GGML_NATIVE=OFF: no -march=native). Only
# the llama-server and mtmd targets are built, with JOBS (default 2) parallel jobs.
#
# Environment: JOBS, FORCE=1, SDIST (a llama-cpp-python sdist folder),
#              CMAKE_EXTRA_ARGS (appended to the configure command).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 0
fi

PREFIX="${1:-$ROOT/.cache/llama-server}"
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
BIN="$PREFIX/bin/llama-server"
JOBS="${JOBS:-2}"

if [[ -x "$BIN" && -f "$PREFIX/bin/libllama.so" && "${FORCE:-0}" != "1" ]]; then
    echo "llama-server already built: $BIN" >&2
    echo "$BIN"
    exit 0
fi

for tool in cmake c++; do
    command -v "$tool" >/dev/null || { echo "build_llama_server: '$tool' not found" >&2; exit 1; }
done

SDIST="${SDIST:-$("$ROOT/scripts/build/fetch_llama_sdist.sh")}"
SRC="$SDIST/vendor/llama.cpp"
[[ -f "$SRC/CMakeLists.txt" ]] || { echo "build_llama_server: no llama.cpp sources in $SRC" >&2; exit 1; }

GENERATOR=()
if command -v ninja >/dev/null; then GENERATOR=(-G Ninja); fi
# A build tree configured for another source tree cannot be reused.
if [[ -f "$PREFIX/build/CMakeCache.txt" ]] && ! grep -q "CMAKE_HOME_DIRECTORY:INTERNAL=$SRC\$" "$PREFIX/build/CMakeCache.txt"; then
    rm -rf "$PREFIX/build"
fi

start=$(date +%s)
# Options (all exist in the vendored llama.cpp):
#   GGML_NATIVE=OFF          portable binary (no -march=native)
#   BUILD_SHARED_LIBS=ON     libllama/libggml*/libmtmd as shared libraries, the
#                            ones the Python bindings load; RPATH $ORIGIN so the
#                            server finds them beside itself
#   LLAMA_USE_PREBUILT_UI=OFF, LLAMA_BUILD_UI=OFF
#                            no web UI: otherwise the build downloads it from
#                            a Hugging Face bucket (or runs npm)
#   LLAMA_OPENSSL=OFF        no HTTPS client (model downloads); none needed
#   tests/examples/app OFF   only tools/ (which holds server) is configured
# LLAMA_CURL is not passed: this llama.cpp no longer uses libcurl and only
# warns that the option is deprecated. `llama-server --version` shows the
# vendored llama.cpp commit (the sdist ships its submodule git metadata).
# shellcheck disable=SC2086
cmake -S "$SRC" -B "$PREFIX/build" "${GENERATOR[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF \
    -DBUILD_SHARED_LIBS=ON \
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
    "-DCMAKE_INSTALL_RPATH=\$ORIGIN" \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_OPENSSL=OFF \
    ${CMAKE_EXTRA_ARGS:-} >&2
cmake --build "$PREFIX/build" --target llama-server mtmd -j "$JOBS" >&2

mkdir -p "$PREFIX/bin"
# The libraries first, the binary last: its presence means the folder is whole.
for lib in "$PREFIX"/build/bin/lib*.so*; do
    cp -P "$lib" "$PREFIX/bin/"
done
cp "$PREFIX/build/bin/llama-server" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "built llama-server in $(( $(date +%s) - start )) s: $BIN" >&2
"$BIN" --version >&2 || true
echo "$BIN"
