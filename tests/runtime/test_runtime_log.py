"""llama-runtime.log is private and bounded: 0600, prompt lines (libmtmd's add_text) dropped, secrets redacted,
rotated when full, capped per start; a failed start shows only this start's lines."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from conway.config import load_config
from conway.errors import UserError
from conway.policies.backends.llama_inprocess import quiet_stderr
from conway.runtime.runtime_log import MAX_BYTES, RuntimeLog
from conway.runtime.server import LocalServer

FAILING = '''#!{python}
import sys
print("stand-in loading the model", flush=True)
print("add_text: <|im_start|>system goals.md says PLANTED-TOKEN-123", flush=True)
print("using key sk-abcdefghijklmnopqrstuvwx", flush=True)
print("error: the model file is broken", flush=True)
sys.exit(3)
'''


def cfg(*extra):
    return load_config(None, ["policy=generic", "policy.model_path=/m/model.gguf", "policy.mmproj_path=/m/mmproj.gguf",
                              *extra])


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_failed_start_shows_only_its_own_lines_and_the_log_is_private(tmp_path):
    exe = tmp_path / "llama-server"
    exe.write_text(FAILING.format(python=sys.executable))
    exe.chmod(0o755)
    log = tmp_path / "home" / "llama-runtime.log"
    log.parent.mkdir()
    log.write_text("add_text: an earlier run's prompt\nPREVIOUS RUN output line\n")
    log.chmod(0o644)
    server = LocalServer.from_config(cfg(f"runtime.llama_server_path={exe}"), log, alias="stand-in")
    with pytest.raises(UserError) as err:
        server.start()
    message = str(err.value)
    assert "exited with code 3" in message and "the model file is broken" in message
    assert "PREVIOUS RUN" not in message and "earlier run" not in message
    text = log.read_text()
    assert "PLANTED-TOKEN-123" not in text and "add_text" not in text.split("PREVIOUS RUN")[1]
    assert "sk-abcdefghijklmnopqrstuvwx" not in text and "<redacted>" in text
    assert _mode(log) == 0o600


def test_in_process_output_is_captured_filtered_or_discarded(tmp_path):
    path = tmp_path / "llama-runtime.log"
    log = RuntimeLog(path)
    log.begin("conway loads a model")
    with quiet_stderr(log):
        os.write(2, b"load_tensors: loaded\nadd_text: the whole prompt PLANTED\n")
    with quiet_stderr(log, keep=False):
        os.write(2, b"decode: a line printed while deciding, goals PLANTED2\n")
    text = path.read_text()
    assert "load_tensors: loaded" in text and "PLANTED" not in text
    assert log.tail() == "load_tensors: loaded" and _mode(path) == 0o600


def test_a_full_log_is_rotated_and_one_start_is_capped(tmp_path):
    path = tmp_path / "llama-runtime.log"
    path.write_bytes(b"old line\n" * (MAX_BYTES // 9 + 10))
    log = RuntimeLog(path)
    log.begin("conway starts llama-server")
    assert path.with_name("llama-runtime.log.1").read_bytes().startswith(b"old line")
    line = "x" * 999
    for _ in range(MAX_BYTES // 1000 + 500):
        log.write(line)
    assert MAX_BYTES - 2_000 <= path.stat().st_size < MAX_BYTES + 2_000
    assert "the rest is dropped" in path.read_text()
