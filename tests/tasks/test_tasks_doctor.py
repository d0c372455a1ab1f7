"""`conway tasks doctor`: each application OSWorld's tasks use, installed here or not, its version and OSWorld's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from helpers.task_desktop import REPO

from conway.tasks.facts import APPLICATIONS, doctor, doctor_passed, render_doctor


def test_doctor_says_per_application_what_is_here_and_what_osworlds_vm_has() -> None:
    record = doctor()
    rows = {r["app"]: r for r in record["apps"]}
    assert set(rows) == {a.name for a in APPLICATIONS} and "vs_code" in rows
    for app in APPLICATIONS:
        row = rows[app.name]
        here = next((shutil.which(p) for p in app.programs if shutil.which(p)), None)
        assert row["installed"] == (here is not None) and row["program"] == here
        assert row["osworld_vm"] and row["here"]
    assert rows["libreoffice"]["osworld_vm"] == "LibreOffice 7.3.7.2" and rows["gimp"]["osworld_vm"] == "GIMP 2.10.30"
    assert "Debian does not ship" in rows["vs_code"]["here"]
    text = render_doctor(record)
    assert "OSWorld VM: VS Code 1.91.1" in text and "not comparable with OSWorld leaderboard" in text
    if not rows["vs_code"]["installed"]:
        assert "NOT INSTALLED" in text


def test_doctor_says_whether_the_terminals_text_can_be_read_and_fails_when_it_cannot() -> None:
    # installed without PyGObject, doctor called the terminal's text readable while its tasks scored 0
    missing = "PyGObject is not installed in this Python (…)"
    record = doctor(atspi=lambda: missing)
    assert record["atspi"] == {"readable": False, "problem": missing} and not doctor_passed(record)
    text = render_doctor(record)
    assert f"NOT READABLE: {missing}" in text and "readable over AT-SPI" not in text
    readable = doctor(atspi=lambda: None)
    assert readable["atspi"] == {"readable": True, "problem": None}
    assert doctor_passed(readable) == (readable["installed"] == readable["total"])


def test_doctor_command_prints_json_and_exits_by_what_is_missing(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-m", "conway.cli", "--home", str(tmp_path / "home"), "tasks", "doctor",
                           "--json"], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                          text=True, timeout=120)
    record = json.loads(done.stdout)
    assert record["schema"] == "conway-tasks-doctor/1"
    assert done.returncode == (0 if record["installed"] == record["total"] and record["atspi"]["readable"] else 2)
    if shutil.which("vlc"):  # the version comes from the Debian package that installed it
        vlc = next(r for r in record["apps"] if r["app"] == "vlc")
        assert vlc["package"].startswith("vlc") and vlc["version"][0].isdigit()
