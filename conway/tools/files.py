"""Direct file tools: bounded read, exact atomic replace, append, bounded listing.

Paths go through the tools' environment (`conway.sandbox.environment`). Local (the default): the
current user's paths, relative ones against `workdir`, `~` expanded; routing, not a sandbox (nothing
stops `/etc/...`). In a sandbox: the paths the sandbox shows, links followed as inside it; anything it
hides is refused, and a write where it shows files read-only is refused too.

User mistakes (missing file, a directory, permission denied, no or ambiguous
match) come back as `ToolResult(ok=False)`; `DispatchUncertain` is raised only
when a write failed after it may already have changed the file.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import tempfile
from pathlib import Path

from conway.actions import AppendFile, ListDir, ReadFile, ReplaceText, _Action, types_of
from conway.geometry import ScreenGeometry
from conway.protocols import DispatchUncertain, Tool, ToolResult
from conway.sandbox.environment import Environment, LocalEnvironment
from conway.sandbox.safe_files import open_beneath
from conway.store.durable import fsync_dir
from conway.tasks.env import PathEscape
from conway.text.bounded import HeadTail, NotRegularFile, open_regular, utf8_edges
from conway.tools.row import Setup, ToolRow

_CHUNK = 1 << 16


def _fail(message: str) -> ToolResult:
    return ToolResult(ok=False, error=message)


def _describe(exc: OSError, path: Path) -> str:
    """A short message a model can act on, naming the path."""
    if isinstance(exc, FileNotFoundError):
        return f"no such file or directory: {path}"
    if isinstance(exc, IsADirectoryError):
        return f"is a directory: {path} (use list_dir)"
    if isinstance(exc, NotADirectoryError):
        return f"not a directory (a path component is a file): {path}"
    if isinstance(exc, NotRegularFile):
        return f"not a regular file: {path}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {path}"
    return f"{exc.strerror or exc}: {path}"


class FileTools(Tool):
    name = "files"
    action_types = types_of("file")

    def __init__(self, workdir: Path, read_max_bytes: int = 65536, list_max_entries: int = 200,
                 environment: Environment | None = None):
        self.workdir = Path(os.path.expanduser(str(workdir)))
        self.read_max_bytes = read_max_bytes
        self.list_max_entries = list_max_entries
        self.environment: Environment = environment or LocalEnvironment()
        self._pinned = False
        """During one action in a sandbox: the path is under a folder descriptor; no link is followed."""
        """Which paths exist for the tool and where they live (the same view the shell's commands get)."""

    def availability(self) -> tuple[bool, str]:
        # Tried, not guessed: the working directory must be listable (where the environment keeps it).
        try:
            os.listdir(self.environment.resolve(str(self.workdir), cwd=os.getcwd()).host)
        except PathEscape as exc:
            return False, f"working directory unusable: {exc}"
        except OSError as exc:
            return False, f"working directory unusable: {_describe(exc, self.workdir)}"
        if self.environment.name == "local":
            return True, f"files relative to {self.workdir}"
        ok, how = self.environment.availability()  # a sandbox that cannot start shows nothing
        return ok, f"files relative to {self.workdir}, as {how}" if ok else how

    def close(self) -> None:
        self.environment.close()  # idempotent: the shell tool may close the same one

    def resolve(self, path: str) -> Path:
        return self.environment.resolve(path, cwd=str(self.workdir)).host

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        if not isinstance(action, (ReadFile, ReplaceText, AppendFile, ListDir)):
            return _fail(f"the files tool cannot run {getattr(action, 'type', action)!r}")
        try:
            where = self.environment.resolve(action.path, cwd=str(self.workdir))
        except PathEscape as exc:
            return _fail(f"{exc} (nothing read or written)")
        writes = isinstance(action, (ReplaceText, AppendFile))
        if writes and not where.writable:
            return _fail(f"{where.inside} is read-only in this sandbox (file unchanged)")
        pinned = None
        host = where.host
        if self.environment.name != "local" and where.top is not None:
            # A sandbox may swap any part of the path for a link between this resolution and the open: the
            # folder is held by a descriptor opened with no link followed, the last name opened with O_NOFOLLOW.
            parent, _, name = where.rel.rpartition("/")
            try:
                pinned = open_beneath(where.top, parent or ".", os.O_PATH | os.O_DIRECTORY)
            except OSError as exc:
                return _fail(f"{where.inside}: {exc.strerror or exc} (a link on the way is never followed; "
                             "nothing read or written)")
            host = Path(f"/proc/self/fd/{pinned}") / (name or ".")
        self._pinned = pinned is not None
        try:
            if isinstance(action, ReadFile):
                result = self.read(host)
            elif isinstance(action, ReplaceText):
                result = self.replace(host, action.old, action.new)
            elif isinstance(action, AppendFile):
                result = self.append(host, action.text)
            else:
                result = self.list_dir(host)
        finally:
            self._pinned = False
            if pinned is not None:
                os.close(pinned)
        return _named_inside(result, host, where.inside)

    # --- read ----------------------------------------------------------------

    def read(self, path: Path) -> ToolResult:
        try:
            with open_regular(path, follow=not self._pinned) as f:  # a FIFO or device could block in open()
                st = os.fstat(f.fileno())
                buf = HeadTail(self.read_max_bytes)
                if st.st_size > self.read_max_bytes:
                    # Seek instead of streaming so a huge file costs two small reads.
                    buf.feed(f.read(buf.head_cap))
                    f.seek(max(st.st_size - buf.tail_cap, buf.head_cap))
                    buf.total = st.st_size - buf.tail_cap  # count the skipped middle as seen
                    buf.feed(f.read(buf.tail_cap))
                else:  # small or size-less (/proc) files: stream to EOF
                    while chunk := f.read(_CHUNK):
                        buf.feed(chunk)
        except OSError as exc:
            return _fail(_describe(exc, path))
        head, tail = buf.parts()
        kept = head + tail if not buf.truncated else b"".join(utf8_edges(head, tail))
        notes = []
        if b"\0" in kept:
            notes.append("binary-looking file (contains NUL bytes); undecodable bytes shown as \ufffd")
        else:
            try:
                kept.decode("utf-8")
            except UnicodeDecodeError:
                notes.append("not valid UTF-8 (binary or another encoding); undecodable bytes shown as \ufffd")
        text, truncated = buf.text()
        header = "".join(f"[{n}]\n" for n in notes)
        return ToolResult(ok=True, output=header + text, truncated=truncated,
                          data={"path": str(path), "size": buf.total, "binary": bool(notes)})

    # --- replace -------------------------------------------------------------

    def replace(self, path: Path, old: str, new: str) -> ToolResult:
        # edit through a symlink, not over it (in a sandbox a link is never followed: `run` pinned the folder)
        target = path if self._pinned else Path(os.path.realpath(path))
        try:
            with open_regular(target, follow=not self._pinned) as f:
                before = os.fstat(f.fileno())
                raw = f.read()
        except OSError as exc:
            return _fail(_describe(exc, path))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _fail(f"not valid UTF-8 text (byte {exc.start}); refusing to edit {path}")
        count = _count_overlapping(text, old)
        if count == 0:
            return _fail(f"old text not found in {path}; it must match exactly, including "
                         "whitespace and line breaks (file unchanged)")
        if count > 1:
            return _fail(f"old text is ambiguous: it matches {count} places in {path}; include more "
                         "surrounding text so it matches exactly once (file unchanged)")
        data = text.replace(old, new, 1).encode("utf-8")
        try:
            self._write_atomic(target, data, before)
        except _Certain as exc:
            return _fail(str(exc))
        return ToolResult(ok=True, output=f"replaced 1 occurrence in {path} ({len(raw)} -> {len(data)} bytes)",
                          data={"path": str(path), "size": len(data)})

    def _write_atomic(self, target: Path, data: bytes, before: os.stat_result) -> None:
        """Temp file in the same directory + fsync + os.replace, keeping the mode.

        Failure classes (_Certain becomes an ok=False result; the file is untouched):
        - creating/writing/fsyncing the temp fails: original untouched → _Certain.
        - the file changed since we read it: nothing written → certain, refused.
        - os.replace raises and the temp still exists: the rename did not happen → certain.
        - os.replace raises and the temp is gone: it may have happened → DispatchUncertain.
        - the directory fsync fails after the rename: the new content is in place, only its
          durability is unknown → DispatchUncertain (a crash could still lose it).
        """
        try:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".conway-tmp")
        except OSError as exc:
            raise _Certain(f"cannot create a temporary file next to {target}: {exc.strerror or exc} "
                           "(file unchanged)") from exc
        try:
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    if hasattr(os, "fchmod"):  # mkstemp makes 0600; keep the original's mode
                        os.fchmod(f.fileno(), stat.S_IMODE(before.st_mode))
                    if hasattr(os, "geteuid") and os.geteuid() == 0:  # and its owner (a task desktop's user)
                        os.fchown(f.fileno(), before.st_uid, before.st_gid)
                    os.fsync(f.fileno())
                now = os.stat(target, follow_symlinks=not self._pinned)
                if (now.st_mtime_ns, now.st_size, now.st_ino) != (before.st_mtime_ns, before.st_size, before.st_ino):
                    raise _Certain(f"{target} changed while it was being edited; nothing written (retry)")
            except _Certain:
                raise
            except OSError as exc:
                raise _Certain(f"could not write the new version of {target}: {exc.strerror or exc} "
                               "(file unchanged)") from exc
            try:
                os.replace(tmp, target)
            except OSError as exc:
                if os.path.exists(tmp):
                    raise _Certain(f"could not replace {target}: {exc.strerror or exc} (file unchanged)") from exc
                raise DispatchUncertain(f"replacing {target} failed after the rename may have happened: {exc}") from exc
        except BaseException:
            _remove_quietly(tmp)
            raise
        try:
            fsync_dir(target.parent)
        except OSError as exc:
            raise DispatchUncertain(f"{target} was replaced but its directory could not be synced: {exc}") from exc

    # --- append --------------------------------------------------------------

    def append(self, path: Path, text: str) -> ToolResult:
        data = text.encode("utf-8")
        try:
            st = os.stat(path, follow_symlinks=not self._pinned)
        except OSError:
            st = None  # missing (created below) or unreadable (open reports it)
        if st is not None and stat.S_ISDIR(st.st_mode):
            return _fail(_describe(IsADirectoryError(), path))
        if st is not None and not stat.S_ISREG(st.st_mode):  # opening a FIFO for writing blocks
            return _fail(f"not a regular file: {path}")
        created = st is None
        try:
            # O_APPEND: every write lands at the end even if someone else appends too.
            nofollow = getattr(os, "O_NOFOLLOW", 0) if self._pinned else 0
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0) | nofollow, 0o666)
            if created and self._pinned and os.geteuid() == 0:  # the sandbox's user owns what it finds there
                folder = os.stat(path.parent)
                os.fchown(fd, folder.st_uid, folder.st_gid)
        except OSError as exc:  # nothing opened → nothing written: certain
            if isinstance(exc, FileNotFoundError):
                return _fail(f"parent directory does not exist: {path.parent} (append creates the file, "
                             "not its directories)")
            return _fail(_describe(exc, path))
        try:
            start = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            except OSError as exc:
                # Unchanged size → certain nothing landed; otherwise part of it did.
                if os.fstat(fd).st_size == start:
                    return _fail(f"could not append to {path}: {exc.strerror or exc} (file unchanged)")
                raise DispatchUncertain(f"append to {path} failed part-way: {exc}") from exc
            try:
                os.fsync(fd)
            except OSError as exc:  # written but maybe not durable: the outcome is unknown
                raise DispatchUncertain(f"appended to {path} but fsync failed: {exc}") from exc
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        verb = "created" if created else "appended to"
        return ToolResult(ok=True, output=f"{verb} {path}: wrote {len(data)} bytes (now {size} bytes)",
                          data={"path": str(path), "size": size, "created": created})

    # --- list ----------------------------------------------------------------

    def list_dir(self, path: Path) -> ToolResult:
        held = None
        try:
            if self._pinned:  # the folder itself opened with no link followed, then listed through its descriptor
                held = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            with os.scandir(f"/proc/self/fd/{held}" if held is not None else path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if held is not None:
                os.close(held)
            if isinstance(exc, NotADirectoryError):
                return _fail(f"not a directory: {path} (use read_file)")
            return _fail(_describe(exc, path))
        try:
            return self._listing(path, entries)
        finally:
            if held is not None:
                os.close(held)

    def _listing(self, path: Path, entries: list[os.DirEntry]) -> ToolResult:
        shown = entries[: self.list_max_entries]
        lines = [f"{path}: {len(entries)} entries"]
        for e in shown:
            lines.append(_entry_line(e))
        left = len(entries) - len(shown)
        if left:
            lines.append(f"[... {left} more entries not shown: listed the first {len(shown)} of "
                         f"{len(entries)} in name order ...]")
        return ToolResult(ok=True, output="\n".join(lines), truncated=bool(left),
                          data={"path": str(path), "entries": len(entries), "omitted": left})


def _named_inside(result: ToolResult, host: Path, inside: str) -> ToolResult:
    """A sandbox may show a file at another path than the host's (the task's /home/user): the model is told
    the path it used, never where the sandbox keeps it."""
    if str(host) == inside:
        return result
    def swap(value):
        return value.replace(str(host), inside) if isinstance(value, str) else value
    return dataclasses.replace(result, output=swap(result.output), error=swap(result.error),
                               data={k: swap(v) for k, v in result.data.items()})


class _Certain(Exception):
    """A write failed before anything changed; becomes an ok=False result."""


def _entry_line(e: os.DirEntry) -> str:
    try:
        if e.is_symlink():
            return f"{e.name}@ -> {os.readlink(e.path)}"
        if e.is_dir():
            return f"{e.name}/"
        return f"{e.name}  {e.stat().st_size} bytes"
    except OSError as exc:
        return f"{e.name}  ({exc.strerror or exc})"


def _count_overlapping(text: str, needle: str) -> int:
    # Overlapping on purpose: "aa" in "aaa" is two candidate places, hence ambiguous.
    count, i = 0, text.find(needle)
    while i != -1:
        count += 1
        i = text.find(needle, i + 1)
    return count


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _make(s: Setup) -> Tool:
    return FileTools(s.workdir, read_max_bytes=s.cfg.read_max_bytes, list_max_entries=s.cfg.list_max_entries,
                     environment=s.environment)


ROW = ToolRow("file", _make)
