#!/usr/bin/env bash
# scripts/build/fetch_llama_sdist.sh [DEST]
#
# Fetch the llama-cpp-python 0.3.36 SOURCE distribution and unpack it into
# DEST (default: .cache/llama-cpp-python-0.3.36, git-ignored), then print
# DEST. Skips all work when DEST/vendor/llama.cpp/convert_hf_to_gguf.py is
# already there.
#
# Why the sdist: it carries vendor/llama.cpp, i.e. the exact llama.cpp that
# the installed llama_cpp Python package was built from, including
#   - convert_hf_to_gguf.py and its bundled gguf-py (the released `gguf`
#     package on the registry is older and lacks LazyChunkedTensor), and
#   - the C++ sources of llama-server (see scripts/build/build_llama_server.sh).
#
# Uses only pip (`pip download --no-binary :all:`), so pip's HTTP cache makes
# repeat downloads cheap. Environment:
#   PYTHON   interpreter whose pip is used (default: .venv/bin/python, then python3)
#   LLAMA_CPP_PYTHON_VERSION   (default 0.3.36; DEST default follows it)
set -euo pipefail

VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DEST="${1:-$ROOT/.cache/llama-cpp-python-$VERSION}"

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit 0
fi

if [[ -f "$DEST/vendor/llama.cpp/convert_hf_to_gguf.py" ]]; then
    echo "$DEST"
    exit 0
fi

if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

"$PYTHON" -m pip download "llama-cpp-python==$VERSION" --no-deps \
    --no-binary :all: -d "$TMP" >&2

ARCHIVE="$(ls "$TMP"/llama_cpp_python-"$VERSION".tar.gz 2>/dev/null || true)"
if [[ -z "$ARCHIVE" ]]; then
    echo "fetch_llama_sdist: pip did not produce llama_cpp_python-$VERSION.tar.gz" >&2
    exit 1
fi

# Unpack next to DEST and rename atomically, so an interrupted run never
# leaves a half-filled DEST that the skip check above would accept.
mkdir -p "$(dirname "$DEST")"
STAGE="$(mktemp -d "$(dirname "$DEST")/.sdist-XXXXXX")"
tar -xzf "$ARCHIVE" -C "$STAGE"
rm -rf "$DEST"
mv "$STAGE/llama_cpp_python-$VERSION" "$DEST"
rmdir "$STAGE"

if [[ ! -f "$DEST/vendor/llama.cpp/convert_hf_to_gguf.py" ]]; then
    echo "fetch_llama_sdist: $DEST lacks vendor/llama.cpp/convert_hf_to_gguf.py" >&2
    exit 1
fi
echo "$DEST"
