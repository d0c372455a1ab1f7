"""The server checked as well as the request (issue 43): a real llama-server on the tiny VLM is asked how many
tokens it makes of screenshots of three shapes, against the family's processor; one started with a smaller image
limit than the family's is flagged, in one line with both numbers, and the right one passes. Real processes only."""

from __future__ import annotations

import pytest
from conftest import run_cli
from helpers.tiny_vlm import MMPROJ
from test_server_props_llama import _Server

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def test_a_llama_server_that_sees_screenshots_as_the_processor_does_passes():
    with _Server("--mmproj", str(MMPROJ), ctx=16384) as server:
        proc = run_cli("models", "--conformance", "--check-server", "--endpoint", server.base_url, "policy=generic",
                       timeout=300)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("image tokens")]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(lines) == 3 and "1920x1080 sent as 1932x1092: the server counts 2693, the qwen2.5-vl processor " \
        "2691" in lines[1] and not any("DIFFERENT" in line for line in lines)
    assert "chat template: the server renders the model's own (the GGUF's tokenizer.chat_template)" in proc.stdout


def test_a_llama_server_with_a_smaller_image_limit_is_flagged_with_both_numbers():
    with _Server("--mmproj", str(MMPROJ), "--image-max-tokens", "256", ctx=16384) as server:
        proc = run_cli("models", "--conformance", "--check-server", "--endpoint", server.base_url, "policy=generic",
                       timeout=300)
    flagged = [line for line in proc.stdout.splitlines() if "DIFFERENT" in line]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(flagged) == 3 and "the qwen2.5-vl processor 2691" in flagged[1]
    assert "--image-max-tokens 16384 or more" in flagged[1]


def test_a_llama_server_started_with_another_chat_template_is_flagged(tmp_path):
    other = tmp_path / "other.jinja"  # a template unlike the model's: no system turn, other markers
    other.write_text("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</s>{% endfor %}"
                     "{% if add_generation_prompt %}<assistant>{% endif %}", encoding="utf-8")
    with _Server("--mmproj", str(MMPROJ), "--chat-template-file", str(other), ctx=16384) as server:
        proc = run_cli("models", "--conformance", "--check-server", "--endpoint", server.base_url, "policy=generic",
                       timeout=300)
    line = next(line for line in proc.stdout.splitlines() if line.startswith("chat template"))
    assert proc.returncode == 1 and "DIFFERENT from the model's own at char 1" in line, proc.stdout + proc.stderr
