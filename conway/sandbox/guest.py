"""What a task's desktop adds to the system's programs so that OSWorld's task files run as on its VM.

OSWorld's steps name programs its Ubuntu VM has and Debian names differently or lacks: `google-chrome`
(Debian ships Chromium), `python` with PyAutoGUI, `sudo` (its user has a password; here commands already run
as the sandbox's uid 0 holding no capability), and `vlc` (Debian's refuses uid 0). The desktop writes a
small folder with those names (`write_guest`) and binds it read-only at `/run/conway`; its `bin/` comes
first on the sandbox's PATH and its `lib/` is PYTHONPATH. Every entry runs the real application or the
system's program; the two stand-ins say so: PyAutoGUI (`conway/sandbox/_guest_pyautogui.py`) and `apt-get`
(`_APT`: installs nothing, succeeds for packages already here).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conway.machine.packages import installed_packages

__all__ = ["CHROME_FLAGS", "GUEST_BIN", "GUEST_DIR", "GUEST_LIB", "GUEST_PROGRAMS", "OFFICE_SETTINGS", "seed_home",
           "write_guest"]

GUEST_DIR = "/run/conway"
GUEST_BIN = f"{GUEST_DIR}/bin"
GUEST_LIB = f"{GUEST_DIR}/lib"
CHROME_FLAGS = ("--no-sandbox", "--no-first-run", "--no-default-browser-check", "--disable-gpu",
                "--password-store=basic", "--disable-dev-shm-usage", "--disable-features=LocalNetworkAccessChecks")
"""Chromium inside bubblewrap: its own sandbox cannot nest in bubblewrap's namespaces and it refuses root
without --no-sandbox; no first-run page, no keyring. No Local Network Access checks: with them, a new profile's
first start writes their migration mark, `profile.default_content_setting_values.has_migrated_local_network_access`
(Chromium's own, not Debian's: its master_preferences are not applied under --no-first-run), and OSWorld's
`data_delete_automacally`, written before that mark existed, reads any `default_content_setting_values` as
"delete on close is on", so a profile nobody touched passed (chrome 99146c54 scored 1 idle); without them the
new profile has no such key, as the checker expects of an untouched Chrome."""
_HERE = Path(__file__).parent

_CHROME = f"""#!/bin/sh
# OSWorld's google-chrome: Debian's Chromium, with Chrome's profile folder (where OSWorld's steps and getters
# look: ~/.config/google-chrome), so --remote-debugging-port and the rest of a task's flags go through as given;
# told it runs on GNOME, as on OSWorld's Ubuntu VM, so a new profile takes GTK's theme (system_theme 1) as there:
# with no desktop named it takes the classic one (0), which OSWorld's chrome_appearance_mode_ui reads as "light"
# whatever the colour mode (chrome 93eabf48 scored its dark-mode setup as light)
export XDG_CURRENT_DESKTOP=GNOME
exec /usr/bin/chromium {" ".join(CHROME_FLAGS)} --user-data-dir="$HOME/.config/google-chrome" "$@"
"""
_SUDO = """#!/bin/sh
# OSWorld's user runs `echo PASSWORD | sudo -S command`; here every command already runs as the sandbox's
# uid 0 (holding no capability), so sudo drops its own options and runs the command as it is
while [ $# -gt 0 ]; do
  case "$1" in
    -u|-g|-p|-C|-D|-h|-r|-t|-U) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -eq 0 ] && exit 0
exec "$@"
"""
_PYTHON = """#!/bin/sh
# OSWorld's VM has `python`; Debian has python3
exec /usr/bin/python3 "$@"
"""
_VLC = f"""#!/bin/sh
# VLC started as uid 0 with OSWorld's HTTP interface (conway/sandbox/_guest_vlc.py says why)
exec /usr/bin/python3 {GUEST_LIB}/conway_vlc.py "$@"
"""
_APT = f"""#!/bin/sh
# A stand-in for apt-get/apt, named as one: OSWorld's setups run `sudo apt-get update && sudo apt-get install X`
# on a VM with the network; the sandbox has neither network nor privilege, so `update` keeps the lists as they
# are, `install` succeeds when every package named is already installed here (the project's setup
# installs those OSWorld's tasks name) and fails, naming the missing ones, otherwise, and `list --installed`
# names the packages installed here as apt does (name/now installed); nothing else is done
verb=""; missing=""
for arg in "$@"; do
  case "$arg" in
    -*) ;;
    *) if [ -z "$verb" ]; then verb="$arg"
       elif [ "$verb" = install ] && ! grep -qxF "${{arg%%:*}}" {GUEST_LIB}/installed-packages; then
         missing="$missing $arg"
       fi ;;
  esac
done
case "$verb" in
  update|"") exit 0 ;;
  list) case " $* " in *" --installed "*) sed 's|$|/now [installed]|' {GUEST_LIB}/installed-packages; exit 0 ;; esac
        echo "E: the disposable desktop's apt lists only what is installed (apt list --installed)" >&2; exit 100 ;;
  install) [ -z "$missing" ] && exit 0
           echo "E: the disposable desktop installs nothing (no network):$missing not installed here" >&2; exit 100 ;;
  *) echo "E: the disposable desktop's apt-get does only update, install and list --installed (got $verb)" >&2; exit 100 ;;
esac
"""
GUEST_PROGRAMS: dict[str, str] = {"google-chrome": _CHROME, "google-chrome-stable": _CHROME, "sudo": _SUDO,
                                  "python": _PYTHON, "vlc": _VLC, "apt-get": _APT, "apt": _APT}
"""The programs `/run/conway/bin` holds, by name → their script."""


def write_guest(folder: Path) -> Path:
    """Write the guest folder (bin/, lib/) into `folder` (made here) and return it."""
    bin_dir, lib_dir = folder / "bin", folder / "lib"
    bin_dir.mkdir(parents=True)
    lib_dir.mkdir()
    for name, script in GUEST_PROGRAMS.items():
        path = bin_dir / name
        path.write_text(script, encoding="utf-8")
        path.chmod(0o755)
    shutil.copyfile(_HERE / "_guest_pyautogui.py", lib_dir / "pyautogui.py")
    shutil.copyfile(_HERE / "_guest_vlc.py", lib_dir / "conway_vlc.py")
    # Conway's own helpers that read the desktop run inside its box, never on this side (docs/desktop.md#the-box)
    for helper in (_HERE / "_terminal_text.py", _HERE / "_atspi_xml.py", _HERE.parent / "observe" / "_atspi_snapshot.py"):
        shutil.copyfile(helper, lib_dir / helper.name)
    (lib_dir / "installed-packages").write_text("".join(f"{name}\n" for name in installed_packages()),
                                                encoding="utf-8")
    return folder




OFFICE_SETTINGS = ".config/libreoffice/4/user/registrymodifications.xcu"
_OFFICE_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" \
xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="WarnAlienFormat" oor:op="fuse">\
<value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse">\
<value>false</value></prop></item>
<item oor:path="/org.openoffice.Setup/Product"><prop oor:name="ooSetupLastVersion" oor:op="fuse">\
<value>7.4</value></prop></item>
</oor:items>
"""


MIME_DEFAULTS = ".config/mimeapps.list"
# Plain text opens in the text editor, as on OSWorld's VM (gedit there, Mousepad here). Without this,
# xdg-open picks LibreOffice Writer once it is installed (it also claims text/plain).
_MIME_LIST = """[Default Applications]
text/plain=org.xfce.mousepad.desktop
"""


def seed_home(home: Path) -> None:
    """The settings OSWorld's VM has that its task files rely on, written into a fresh home: LibreOffice saves
    in the document's own format without asking (OSWorld's postconfig presses Ctrl+S on .xlsx/.docx/.pptx
    files and reads them back; a "Keep current format?" dialog would leave them unsaved); no "Did you know?"
    tip nor first-run bar (a used VM's LibreOffice shows neither; the tip, popping up after the first keys,
    swallowed them); a text file opens in the text editor."""
    office = home / OFFICE_SETTINGS
    office.parent.mkdir(parents=True, exist_ok=True)
    office.write_text(_OFFICE_XCU, encoding="utf-8")
    (home / MIME_DEFAULTS).write_text(_MIME_LIST, encoding="utf-8")
