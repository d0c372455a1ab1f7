"""Getters that read the browser's profile files (`Preferences`, `Bookmarks`) where they lie in the task's home,
as OSWorld's chrome.py getters read them from its VM: no running browser, no DevTools session.

OSWorld's VM runs Google Chrome (`~/.config/google-chrome/Default/`); the disposable desktop runs Chromium, whose
profile is `~/.config/chromium/Default/`. The first of the two that holds the file is read. Each getter answers
what OSWorld's does when the file is missing or not JSON (its fallback value: "Google" for the search engine,
"false" for a switch ...), so a task scores as it would there.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from conway.tasks.env import GUEST_HOME, TaskEnv

PROFILES = (f"{GUEST_HOME}/.config/google-chrome/Default", f"{GUEST_HOME}/.config/chromium/Default")
"""Where OSWorld's Chrome keeps its profile, then where the desktop's Chromium does."""
DEFAULT_FONT_SIZES = {"default_fixed_font_size": 13, "default_font_size": 16}
"""OSWorld's answer for the font sizes when the preferences cannot be read."""


def _profile_file(env: TaskEnv, name: str) -> Path | None:
    for folder in PROFILES:
        host = env.host_path(f"{folder}/{name}")
        if host.is_file():
            return host
    return None


def _preferences(env: TaskEnv) -> Any:
    """The Preferences file's JSON; ValueError / OSError / TypeError where OSWorld's read fails (it falls back)."""
    path = _profile_file(env, "Preferences")
    if path is None:
        raise FileNotFoundError("no browser Preferences file")
    return json.loads(path.read_bytes())


_READ_FAILS = (OSError, ValueError, TypeError, AttributeError, KeyError)


def default_search_engine(env: TaskEnv, config: dict[str, Any]) -> Any:
    try:
        data = _preferences(env)
        return data.get("default_search_provider_data", {}).get("template_url_data", {}).get("short_name", "Google")
    except _READ_FAILS:
        return "Google"


def profile_name(env: TaskEnv, config: dict[str, Any]) -> Any:
    try:
        return _preferences(env).get("profile", {}).get("name", None)
    except _READ_FAILS:
        return None


def enable_do_not_track(env: TaskEnv, config: dict[str, Any]) -> str:
    try:
        return "true" if _preferences(env).get("enable_do_not_track", {}) else "false"
    except _READ_FAILS:
        return "false"


def enable_safe_browsing(env: TaskEnv, config: dict[str, Any]) -> str:
    """"true" when safe browsing is on, standard or enhanced."""
    try:
        safe = _preferences(env).get("safebrowsing", {})
        return "true" if bool(safe.get("enhanced", False)) or bool(safe.get("enabled", False)) else "false"
    except _READ_FAILS:
        return "false"


def new_startup_page(env: TaskEnv, config: dict[str, Any]) -> str:
    """"true" for a fresh start (no `session` key) or `restore_on_startup` 5 (open the new tab page)."""
    try:
        data = _preferences(env)
        if "session" not in data:
            return "true"
        return "true" if data.get("session", {}).get("restore_on_startup", {}) == 5 else "false"
    except _READ_FAILS:
        return "Google"  # OSWorld's fallback here, copied from its search-engine getter: never "true"


def data_delete_automacally(env: TaskEnv, config: dict[str, Any]) -> str:
    """"true" when the profile sets default content settings (OSWorld's reading of "delete data on close")."""
    try:
        return "true" if _preferences(env)["profile"].get("default_content_setting_values", None) is not None \
            else "false"
    except _READ_FAILS:
        return "Google"  # OSWorld's fallback, as in new_startup_page


def chrome_font_size(env: TaskEnv, config: dict[str, Any]) -> Any:
    try:
        return _preferences(env).get("webkit", {}).get("webprefs", {**DEFAULT_FONT_SIZES, "minimum_font_size": 13})
    except _READ_FAILS:
        return dict(DEFAULT_FONT_SIZES)


def bookmarks(env: TaskEnv, config: dict[str, Any]) -> Any:
    """The Bookmarks file's `roots` (bookmark_bar, other, synced); [] when there is no file. A file that is not
    JSON raises, as OSWorld's getter does."""
    path = _profile_file(env, "Bookmarks")
    if path is None:
        return []
    content = path.read_bytes()
    if not content:
        return []
    return json.loads(content).get("roots", {})


def _extension_fields(env: TaskEnv, *path: str) -> Any:
    """Each installed extension's value at `path` in its settings entry; OSWorld's fallback "Google" where the
    preferences or an entry cannot be read."""
    try:
        found = []
        for entry in _preferences(env).get("extensions", {}).get("settings", {}).values():
            for key in path:
                entry = entry[key]
            found.append(entry)
        return found
    except _READ_FAILS:
        return "Google"


def find_unpacked_extension_path(env: TaskEnv, config: dict[str, Any]) -> Any:
    """The folder of every extension the profile lists (an unpacked one is loaded from its folder)."""
    return _extension_fields(env, "path")


def find_installed_extension_name(env: TaskEnv, config: dict[str, Any]) -> Any:
    return _extension_fields(env, "manifest", "name")


def _query(path: Path | None, sql: str) -> list[tuple[Any, ...]] | None:
    """The rows of `sql` on a copy of the browser's SQLite file (a running browser holds a lock on the original),
    or None where OSWorld's getter gives None: no file, or not a database with that table."""
    if path is None:
        return None
    with tempfile.TemporaryDirectory(prefix="conway-browser-db-") as scratch:
        copy = Path(scratch) / "db"
        shutil.copyfile(path, copy)
        conn = sqlite3.connect(copy)
        try:
            return conn.execute(sql).fetchall()
        except sqlite3.Error:
            return None
        finally:
            conn.close()


def history(env: TaskEnv, config: dict[str, Any]) -> list[tuple[Any, ...]] | None:
    """The browser history's visited pages as (url, title, last_visit_time) rows."""
    return _query(_profile_file(env, "History"), "SELECT url, title, last_visit_time FROM urls")


def cookie_data(env: TaskEnv, config: dict[str, Any]) -> list[tuple[Any, ...]] | None:
    """Every row of the cookie store (the host is column 1). OSWorld reads `Default/Cookies`; Chromium keeps it in
    `Default/Network/Cookies` now, read when the first is not there."""
    return _query(_profile_file(env, "Cookies") or _profile_file(env, "Network/Cookies"), "SELECT * FROM cookies")


def shortcuts_on_desktop(env: TaskEnv, config: dict[str, Any]) -> dict[str, str]:
    """Each `.desktop` file on the Desktop (a browser's "create shortcut" writes one) by name, with its text.
    A Desktop that is not there, or a file that is not UTF-8, raises, as OSWorld's getter does."""
    desktop = f"{GUEST_HOME}/Desktop"
    names = sorted(e.name for e in env.host_path(desktop).iterdir() if e.name.endswith(".desktop"))
    # each file through host_path too: a link that leads out of the home is refused, never read
    return {name: env.host_path(f"{desktop}/{name}").read_bytes().decode("utf-8") for name in names}


SCHEMES = {0: "system", 1: "light", 2: "dark", "system": "system", "default": "system", "0": "system",
           "light": "light", "1": "light", "dark": "dark", "2": "dark"}


def chrome_appearance_mode_ui(env: TaskEnv, config: dict[str, Any]) -> str:
    """The browser's colour mode, "light", "dark" or "system", as OSWorld's getter reads it: first the running
    browser's settings page (chrome://settings/appearance over DevTools: a Preferences file still waiting for
    the browser's commit would say the old mode), then, when no browser answers or the page shows none, the
    profile's Preferences (`appearance_from_preferences`, OSWorld's `get_chrome_color_scheme`)."""
    from conway.tasks import devtools

    try:
        mode = devtools.ask(env, {"op": "appearance"})
    except devtools.DevToolsError:
        mode = None
    return mode if mode in ("light", "dark", "system") else appearance_from_preferences(env)


def appearance_from_preferences(env: TaskEnv) -> str:
    """The colour mode the profile's Preferences say: an explicit `extensions.theme.system_theme` of 0 is
    light; else `browser.theme.color_scheme2` (or `color_scheme`) 0/1/2; "system" when unset or unreadable."""
    try:
        data = _preferences(env)
        theme = data.get("browser", {}).get("theme", {})
        raw = theme.get("color_scheme2", theme.get("color_scheme"))
        if data.get("extensions", {}).get("theme", {}).get("system_theme") in (0, "0", False):
            return "light"
        key = raw.strip().lower() if isinstance(raw, str) else int(raw) if isinstance(raw, (int, float)) else None
        return SCHEMES.get(key, "system")  # type: ignore[arg-type]
    except _READ_FAILS:
        return "system"


GETTERS = {f.__name__: f for f in (chrome_appearance_mode_ui, history, cookie_data, shortcuts_on_desktop, default_search_engine, profile_name, enable_do_not_track, enable_safe_browsing,
                                   new_startup_page, data_delete_automacally, chrome_font_size, bookmarks,
                                   find_unpacked_extension_path, find_installed_extension_name)}
