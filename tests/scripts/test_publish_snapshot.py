"""scripts/build/publish_snapshot.py: one commit's source, never its history; refusals name the file; --verify reads a copy back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.build import publish_snapshot as snap

REPO = Path(__file__).resolve().parents[2]


def _repo(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir(parents=True)
    for name, data in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True)
    return repo


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.build.publish_snapshot", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_the_snapshot_holds_the_commit_by_the_rule_and_its_record(tmp_path):
    repo = _repo(tmp_path, {"README.md": "hi\n", "conway/a.py": "x = 1\n", "training/results/run.json": "{}",
                            "notes/private.txt": "not in the rule\n", "docs/shot.png": b"\x89PNG\0\0data"})
    (repo / "conway" / "a.py").write_text("x = 2  # an edit after the commit never leaks in\n")
    record = snap.build(tmp_path / "out", repo=repo)
    out = tmp_path / "out"
    assert sorted(record["files"]) == ["README.md", "conway/a.py", "docs/shot.png"]
    assert (out / "conway" / "a.py").read_text() == "x = 1\n"
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    saved = json.loads((out / snap.RECORD).read_text())
    assert saved["commit"] == head.strip() and saved["format"] == snap.FORMAT
    assert snap.verify(out) == []
    assert not (out / ".git").exists()


@pytest.mark.parametrize("name,data,why", [
    ("conway/settings.py", 'KEY = "sk-proj-Q7rT2vX9mK4pL8nB3wZ6yH1c"\n', "credential on line 1"),
    ("configs/model.gguf", b"GGUF\0\0\0", "a weight file"),
    ("conway/state.json", '{"status": "running"}', "runtime state"),
    ("scripts/tool.bin.dat", b"\x7fELF\0\0\0\x02", "a binary file"),
])
def test_a_secret_a_weight_a_state_file_or_a_binary_is_refused_by_name(tmp_path, name, data, why):
    repo = _repo(tmp_path, {"README.md": "hi\n", name: data})
    with pytest.raises(snap.SnapshotError, match=why) as err:
        snap.build(tmp_path / "out", repo=repo)
    assert name in str(err.value)
    assert not (tmp_path / "out").exists()


def test_the_tests_planted_fakes_pass_but_the_same_shape_outside_the_tests_does_not(tmp_path):
    fake = 'KEY = "sk-abcdefghijklmnopqrstuvwx"\n'
    snap.build(tmp_path / "ok", repo=_repo(tmp_path / "a", {"tests/test_x.py": fake}))
    with pytest.raises(snap.SnapshotError, match="conway/x.py"):
        snap.build(tmp_path / "no", repo=_repo(tmp_path / "b", {"conway/x.py": fake}))


def test_this_repository_publishes_and_verify_finds_a_changed_and_a_missing_file(tmp_path):
    out = tmp_path / "snap"
    done = _cli(str(out))
    assert done.returncode == 0, done.stderr
    assert _cli("--verify", str(out)).returncode == 0
    (out / "README.md").write_text("changed\n")
    (out / "pyproject.toml").unlink()
    (out / "extra.txt").write_text("planted\n")
    done = _cli("--verify", str(out))
    assert done.returncode == 2
    assert "differs: README.md" in done.stdout and "missing: pyproject.toml" in done.stdout
    assert "not on the record: extra.txt" in done.stdout


def test_upload_to_a_local_folder_is_verified_there_and_never_overwrites(tmp_path):
    repo = _repo(tmp_path, {"README.md": "hi\n", "conway/a.py": "x = 1\n"})
    snap.build(tmp_path / "out", repo=repo)
    snap.upload(tmp_path / "out", str(tmp_path / "published"))
    assert snap.verify(tmp_path / "published") == []
    with pytest.raises(snap.SnapshotError, match="already exists"):
        snap.upload(tmp_path / "out", str(tmp_path / "published"))


def test_bad_input_is_one_line(tmp_path):
    (tmp_path / "exists").mkdir()
    for args in ([str(tmp_path / "exists")], ["--verify", str(tmp_path)], [str(tmp_path / "n"), "--commit", "nope"]):
        done = _cli(*args)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
