"""A source snapshot for publication: the tracked source, tests, docs and examples of one commit, never its history.

    python -m scripts.build.publish_snapshot OUT            # build OUT/ from HEAD
    python -m scripts.build.publish_snapshot OUT --commit REV
    python -m scripts.build.publish_snapshot --verify DIR   # read a published copy back
    python -m scripts.build.publish_snapshot OUT --upload TARGET

What goes in is decided by the rule below (`INCLUDE`, `EXCLUDE`), applied to the files git tracks at
the commit, and read from the commit itself (the working tree's edits never leak in). Experiment
data, the test fixtures' weights and everything git ignores (runtime state, the venv, caches) stay
out. Whatever the rule lets through is still checked, and the snapshot is refused, naming the file,
when it would carry a credential, a weight file, a binary or a home's runtime state.

OUT/_source_commit.json records the commit and the sha256 of every file; `--verify DIR` recomputes
them and lists every file that differs, is missing or is not on the record (exit 2 when any).

`--upload TARGET`: a local folder (the snapshot is copied there and verified in place) or
`hf:OWNER/NAME`, a Hugging Face repository through `huggingface_hub.upload_folder` (not reachable
from these machines: only the local target is tested).

Exit 0 done; 1 a refusal or bad input (one line); 2 `--verify` found differences.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from conway.redact import secret_spans

REPO = Path(__file__).resolve().parents[2]
RECORD = "_source_commit.json"
FORMAT = "conway-snapshot/1"

# the rule: tracked paths under these prefixes go in ...
INCLUDE = ("README.md", "pyproject.toml", ".gitignore", ".ci/", "conway/", "configs/", "evals/", "datasets/",
           "docs/", "scripts/", "tests/", "training/")
# ... except these: experiment results, and weights the tests rebuild (scripts/build/build_tiny_vlm.py)
EXCLUDE = ("training/results/", "tests/fixtures/tiny-vlm/")

WEIGHTS = (".gguf", ".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".onnx", ".npz", ".h5")
IMAGES = (".png", ".jpg", ".jpeg")
IMAGE_FOLDERS = ("docs/",)  # pictures of the viewer
BINARY_FOLDERS = ("tests/data/", "evals/osworld_local/cache/")  # recorded screenshots, hostile parser inputs; the
# shipped task suite's office documents (its inputs and expected files, made by scripts/build/build_osworld_local.py)
PLANTED_FOLDERS = ("tests/", "conway/redact.py")  # the tests' fake keys, the credential patterns themselves
PLANTED_FILES = ("tests/test_secrets.py",)  # nothing but fake credentials of every shape, by design
STATE_FILES = {"state.json", "state.previous.json", "control.json", "instance.lock", "memory.previous.md"}
STATE_FOLDERS = ("tests/data/",)  # recorded homes the tests replay


class SnapshotError(Exception):
    """The snapshot cannot be made as asked (one line, for the user)."""


@dataclass(frozen=True)
class Entry:
    path: str
    mode: str  # git's: 100644, 100755, 120000 (a symlink)
    blob: str


def git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True)
    if done.returncode != 0:
        raise SnapshotError(f"git {' '.join(args)}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def selected(path: str) -> bool:
    return path.startswith(INCLUDE) and not path.startswith(EXCLUDE)


def tracked(repo: Path, commit: str) -> list[Entry]:
    out = git(repo, "ls-tree", "-r", "-z", commit)
    entries = []
    for item in out.split(b"\0"):
        if not item:
            continue
        meta, path = item.decode().split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob" and selected(path):
            entries.append(Entry(path, mode, blob))
    return entries


def planted(path: str, text: str) -> bool:
    """Where fakes belong, a key-shaped string that is one: an alphabet run, a documented example key,
    a placeholder word, a pattern's own source, or a fragment too short to be a credential. Anywhere else nothing is."""
    if not path.startswith(PLANTED_FOLDERS):
        return False
    if path in PLANTED_FILES:
        return True
    fakes = ("abcdefgh", "EXAMPLE", "hunter2", "test-key", "[^", "\\s")
    return len(text) < 8 or text.isalpha() or any(f in text for f in fakes)


def refusal(entry: Entry, data: bytes) -> str | None:
    """Why this file may not be published, or None."""
    p = PurePosixPath(entry.path)
    suffix = p.suffix.lower()
    if suffix in WEIGHTS:
        return "a weight file"
    if p.name in STATE_FILES and not entry.path.startswith(STATE_FOLDERS):
        return "a home's runtime state"
    if entry.mode == "120000":
        return None  # a symlink: its target is a path, checked as such when the target itself goes in
    if b"\0" in data[:8192]:
        allowed = entry.path.startswith(BINARY_FOLDERS) or (suffix in IMAGES and entry.path.startswith(IMAGE_FOLDERS))
        return None if allowed else "a binary file"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 text"
    for a, b in secret_spans(text):
        if not planted(entry.path, text[a:b]):
            line = text.count("\n", 0, a) + 1
            return f"what looks like a credential on line {line}"
    return None


def read_blobs(repo: Path, entries: list[Entry]) -> dict[str, bytes]:
    """Every blob's bytes in one `git cat-file --batch` (hundreds of files, one process)."""
    out = git(repo, "cat-file", "--batch", data="".join(e.blob + "\n" for e in entries).encode())
    blobs, pos = {}, 0
    for e in entries:
        header_end = out.index(b"\n", pos)
        size = int(out[pos:header_end].split()[2])
        blobs[e.path] = out[header_end + 1:header_end + 1 + size]
        pos = header_end + 1 + size + 1
    return blobs


def file_digest(path: Path) -> str:
    if path.is_symlink():
        return "symlink:" + hashlib.sha256(str(path.readlink()).encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(out: Path, commit: str = "HEAD", repo: Path = REPO) -> dict:
    """Write the snapshot of `commit` of `repo` into `out` (which must not exist) and return its record."""
    if out.exists():
        raise SnapshotError(f"{out} already exists: choose a new folder")
    sha = git(repo, "rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    entries = tracked(repo, sha)
    blobs = read_blobs(repo, entries)
    problems = [f"{e.path}: {why}" for e in entries if (why := refusal(e, blobs[e.path]))]
    if problems:
        raise SnapshotError(f"refused: {len(problems)} file(s) may not be published: " + "; ".join(problems[:5]))
    out.mkdir(parents=True)
    for e in entries:
        target = out / e.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if e.mode == "120000":
            target.symlink_to(blobs[e.path].decode())
        else:
            target.write_bytes(blobs[e.path])
            if e.mode == "100755":
                target.chmod(0o755)
    record = {"format": FORMAT, "commit": sha, "rule": {"include": list(INCLUDE), "exclude": list(EXCLUDE)},
              "files": {e.path: file_digest(out / e.path) for e in entries}}
    (out / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return record


def verify(folder: Path) -> list[str]:
    """Every way `folder` differs from its own record; empty when it is the published snapshot."""
    try:
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        files = record["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SnapshotError(f"{folder / RECORD} is not a snapshot record: {exc}") from None
    found = []
    for path, digest in sorted(files.items()):
        p = folder / path
        if not p.exists() and not p.is_symlink():
            found.append(f"missing: {path}")
        elif file_digest(p) != digest:
            found.append(f"differs: {path}")
    on_disk = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or p.is_symlink()}
    found += [f"not on the record: {path}" for path in sorted(on_disk - set(files) - {RECORD})]
    return found


def upload(out: Path, target: str) -> None:
    if target.startswith("hf:"):
        try:
            from huggingface_hub import upload_folder
        except ImportError:
            raise SnapshotError("--upload hf:… needs the huggingface_hub package") from None
        upload_folder(folder_path=str(out), repo_id=target[3:], commit_message=f"source snapshot {out.name}")
        return
    dest = Path(target)
    if dest.exists():
        raise SnapshotError(f"{dest} already exists: the upload target must be a new folder")
    shutil.copytree(out, dest, symlinks=True)
    if problems := verify(dest):
        raise SnapshotError(f"the copy at {dest} does not match: " + "; ".join(problems[:5]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.build.publish_snapshot",
                                 description=__doc__.split("\n\n")[0],
                                 epilog="Exit 0 done; 1 a refusal or bad input; 2 --verify found differences.")
    ap.add_argument("out", nargs="?", type=Path, help="the new snapshot folder")
    ap.add_argument("--commit", default="HEAD", help="the commit to publish (default HEAD)")
    ap.add_argument("--verify", type=Path, metavar="DIR", help="check a published copy against its record")
    ap.add_argument("--upload", metavar="TARGET", help="a new local folder, or hf:OWNER/NAME")
    args = ap.parse_args(argv)
    try:
        if args.verify:
            problems = verify(args.verify)
            for line in problems:
                print(line)
            print(f"{args.verify}: {'matches its record' if not problems else f'{len(problems)} difference(s)'}")
            return 2 if problems else 0
        if args.out is None:
            ap.error("give the snapshot folder OUT, or --verify DIR")
        record = build(args.out, args.commit)
        print(f"snapshot of {record['commit'][:12]}: {len(record['files'])} files in {args.out}")
        if args.upload:
            upload(args.out, args.upload)
            print(f"uploaded to {args.upload}")
        return 0
    except SnapshotError as exc:
        print(f"publish_snapshot: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
