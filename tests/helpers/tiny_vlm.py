"""The tiny random-weight VLM's GGUF fixtures and the real llama.cpp runtimes the llama tests need (each skips with
the reason, or how to build what is missing)."""

from __future__ import annotations

from pathlib import Path

import pytest

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-vlm"
MODEL, MMPROJ = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"


def require_fixtures() -> None:
    if not MODEL.exists() or not MMPROJ.exists():
        pytest.skip("tiny VLM fixtures missing (python -m scripts.build.build_tiny_vlm --out tests/fixtures/tiny-vlm)")


def require_inprocess() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -e '.[llama]')")
    require_fixtures()


def llama_server_argv() -> list[str]:
    """The command that starts the llama-server Conway finds (skips when there is none)."""
    from conway.config import RuntimeConfig
    from conway.errors import UserError
    from conway.runtime.server import find_program

    require_fixtures()
    try:
        found = find_program(RuntimeConfig(server="llama-server"))
    except UserError as exc:
        pytest.skip(f"llama-server is not available here: {exc}")
    assert found.kind == "llama-server"
    return list(found.argv0)


def require_llama_server() -> None:
    llama_server_argv()


def wait_context(size: tuple[int, int]):
    """A one-part decision context (`goals.md`: "Wait.") on a plain screenshot of `size`, offering wait and finish."""
    import io

    from PIL import Image

    from conway.protocols import ContextPart, DecisionContext, Observation

    buf = io.BytesIO()
    Image.new("RGB", size, (40, 90, 160)).save(buf, format="PNG")
    obs = Observation(png=buf.getvalue(), captured_size=size, source="synthetic", content_hash="h", change_key="k")
    return DecisionContext(parts=[ContextPart("goals.md", "Wait.")], observation=obs, step=1,
                           action_types=["wait", "finish"])
