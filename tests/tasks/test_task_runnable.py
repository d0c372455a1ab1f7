"""Every reason a task cannot run here is named: steps, getters, metrics, applications, cache files, live URLs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from conway.tasks.cache import cloud_path, download_path
from conway.tasks.runnable import why_not_runnable
from conway.tasks.task import parse_osworld, read_task_file

# what a listing says besides the extras: every extra counts as installed (those reasons are tested by
# saying what is missing), so these pass with only `dev` installed
pytestmark = pytest.mark.usefixtures("every_extra")

EXAMPLES = REPO / "tests" / "data" / "osworld" / "examples"
ALL_STEPS = {"launch", "open", "execute", "command", "sleep", "activate_window", "download", "chrome_open_tabs"}
DL = "https://files.example.org/cache/os/t/setup.sh"
GOLD = "https://files.example.org/cache/os/t/gold.txt"


def everything(_program: str) -> bool:
    return True


def nothing(_program: str) -> bool:
    return False


def readable() -> None:
    """AT-SPI readable from this Python (whether or not PyGObject is installed where the test runs)."""
    return None


def make(config=(), evaluator=None, apps=("os",), instruction="x") -> object:
    ev = evaluator or {"func": "exact_match", "result": {"type": "vm_command_line", "command": "true"},
                       "expected": {"type": "rule", "rules": {"expected": ""}}}
    return parse_osworld({"id": "t", "instruction": instruction, "config": list(config), "related_apps": list(apps),
                          "evaluator": ev}, Path("t.json"))


def test_a_task_with_known_parts_and_nothing_to_fetch_is_runnable():
    t = read_task_file(EXAMPLES / "os" / "e0df059f-28a6-4169-924f-b9623e7184cc.json")
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=nothing) == []


def test_unknown_step_types_getters_and_metrics_are_each_named():
    t = make(config=[{"type": "teleport", "parameters": {}}],
             evaluator={"func": ["compare_smells", "exact_match"], "result": [{"type": "telepathy"},
                                                                              {"type": "vm_command_line"}],
                        "postconfig": [{"type": "levitate", "parameters": {}}]})
    reasons = why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything)
    assert reasons == ["setup step type teleport is not implemented",
                       "postconfig step type levitate is not implemented",
                       "getter telepathy is not implemented", "metric compare_smells is not implemented"]


def test_a_third_partys_account_is_named_as_such():
    t = make(config=[{"type": "googledrive", "parameters": {}}, {"type": "login", "parameters": {}}],
             evaluator={"func": "exact_match", "result": {"type": "googledrive_file"},
                        "expected": {"type": "rule", "rules": {}}})
    reasons = why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything)
    assert reasons == [
        "setup step type googledrive needs a Google Drive account (a third party's, which Conway never holds)",
        "setup step type login needs a login to a third party's web site (a third party's, which Conway never holds)",
        "getter googledrive_file needs a Google Drive account (a third party's, which Conway never holds)"]


def test_update_browse_history_needs_its_empty_database_in_the_cache(tmp_path):
    from conway.tasks.cache import HISTORY_FILE, HISTORY_URL
    t = make(config=[{"type": "update_browse_history", "parameters": {"history": []}}])
    steps = ALL_STEPS | {"update_browse_history"}
    assert why_not_runnable(t, cache_dir=tmp_path, step_types=steps, installed=everything) == [
        f"the setup step's file {HISTORY_URL} is missing from the cache (looked for {tmp_path / t.id / HISTORY_FILE})"]
    (tmp_path / t.id).mkdir()
    (tmp_path / t.id / HISTORY_FILE).write_bytes(b"")
    assert why_not_runnable(t, cache_dir=tmp_path, step_types=steps, installed=everything) == []


def test_an_application_not_installed_names_its_programs():
    t = make(apps=("libreoffice_calc", "chrome", "os"))
    reasons = why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=lambda p: p == "chromium")
    assert reasons == ["application libreoffice_calc is not installed (none of soffice, libreoffice is on PATH)"]
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=lambda p: p in ("soffice", "chromium")) == []


def test_an_application_is_spelled_one_way_in_every_reason():
    said = "application libreoffice_calc is not installed (none of soffice, libreoffice is on PATH)"
    for apps in (("libreoffice calc",), ("LibreOffice Calc",), ("libreoffice_calc", "libreoffice calc")):
        assert why_not_runnable(make(apps=apps), cache_dir=None, step_types=ALL_STEPS, installed=nothing) == [said]


def test_file_kind_tags_are_not_programs_and_the_tags_that_are_name_theirs():
    """OSWorld tags some tasks `pdf` or `image` (a kind of file, opened by the task's other apps): no "application
    pdf is not installed". `ubuntu_media_player` is Ubuntu's Videos (Totem); `terminal` is the desktop's own."""
    t = make(apps=("libreoffice_calc", "os", "image", "pdf"))
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=lambda p: p == "soffice") == []
    t = make(apps=("os", "vlc", "ubuntu_media_player", "terminal"))
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=lambda p: p == "vlc") == [
        "application ubuntu_media_player is not installed (totem is not on PATH)",
        "application terminal is not installed (none of lxterminal, gnome-terminal, xfce4-terminal, xterm, "
        "x-terminal-emulator is on PATH)"]
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS,
                            installed=lambda p: p in ("vlc", "totem", "lxterminal")) == []


def test_the_program_a_launch_step_starts_must_be_installed():
    t = make(config=[{"type": "launch", "parameters": {"command": "VLC_VERBOSE=-1 vlc --start-time=5 a.mp4",
                                                       "shell": True}},
                     {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}}])
    reasons = why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=lambda p: p == "chromium")
    assert reasons == ["the launch step's program vlc is not installed (vlc is not on PATH)"]


def test_a_real_vs_code_task_needs_code():
    t = read_task_file(EXAMPLES / "vs_code" / "276cc624-87ea-4f08-ab93-f770e3790175.json")
    reasons = why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=nothing)
    assert reasons == ["application vscode is not installed (code is not on PATH)"]  # its launch adds nothing


def test_downloads_and_cloud_files_come_from_the_cache_or_are_reasons(tmp_path):
    t = make(config=[{"type": "download", "parameters": {"files": [{"url": DL, "path": "/home/user/setup.sh"}]}}],
             evaluator={"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/a", "dest": "a"},
                        "expected": {"type": "cloud_file", "path": GOLD, "dest": "gold.txt"}})
    no_cache = why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything)
    assert no_cache == [f"download {DL} needs the local cache: give --cache DIR (OSWorld's cache layout)",
                        f"cloud file {GOLD} needs the local cache: give --cache DIR (OSWorld's cache layout)"]
    missing = why_not_runnable(t, cache_dir=tmp_path, step_types=ALL_STEPS, installed=everything)
    assert missing[0] == (f"download {DL} is missing from the cache (looked for "
                          f"{download_path(tmp_path, 't', DL, '/home/user/setup.sh')})")
    assert missing[1].startswith(f"cloud file {GOLD} is missing from the cache")
    for path in (download_path(tmp_path, "t", DL, "/home/user/setup.sh"), cloud_path(tmp_path, "t", "gold.txt")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    assert why_not_runnable(t, cache_dir=tmp_path, step_types=ALL_STEPS, installed=everything) == []


def test_live_urls_are_reasons_and_local_ones_are_not():
    t = make(config=[{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://www.apple.com/",
                                                                                   "http://127.0.0.1:8000/x"]}}],
             instruction="Compare with https://howlongtoread.com/.",
             evaluator={"func": "exact_match", "result": {"type": "vm_command_line", "command": "true"},
                        "expected": {"type": "rule", "rules": {"expected": "https://www.google.com/"}}})
    reasons = why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything)
    offline = ("the task needs the web at run time, and tasks here run offline (tasks run --network lets the "
               "sandbox share this machine's network)")
    assert reasons == [f"live URL https://howlongtoread.com/: {offline}",
                       f"live URL https://www.apple.com/: {offline}"]  # the rule's URL is a value, not a page
    # with --network the sandbox shares the network: the live web is no reason, and neither is `proxy: true`
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything, network=True) == []
    proxied = parse_osworld({"id": "t", "instruction": "x", "proxy": True, "evaluator": {"func": "infeasible"}},
                            Path("t.json"))
    assert why_not_runnable(proxied, cache_dir=None, step_types=ALL_STEPS, installed=everything, network=True) == []


def test_a_conway_task_is_runnable_when_it_declares_criteria(tmp_path):
    good = tmp_path / "good.md"
    good.write_text("---\nacceptance:\n  - file_exists: out.txt\n---\nWrite out.txt.\n")
    bare = tmp_path / "bare.md"
    bare.write_text("Just do something.\n")
    assert why_not_runnable(read_task_file(good), cache_dir=None, step_types=set()) == []
    assert why_not_runnable(read_task_file(bare), cache_dir=None, step_types=set()) == [
        "the task declares no acceptance criteria: nothing would score it"]


def test_a_malformed_download_or_cloud_file_is_a_reason_not_a_crash():
    t = make(config=[{"type": "download", "parameters": {"files": ["https://example.org/a"]}}],
             evaluator={"func": "compare_text_file", "result": {"type": "vm_file", "path": "~/a", "dest": "a"},
                        "expected": {"type": "cloud_file", "path": [GOLD], "dest": "gold.txt", "multi": True}})
    reasons = why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything)
    assert reasons == ["a download setup step is malformed: `files` must be a list of {url, path}",
                       "a cloud_file getter is malformed: `path` and `dest` must be texts (lists of as many with "
                       "`multi`)"]


def test_a_task_that_declares_osworlds_proxy_needs_the_web():
    t = parse_osworld({"id": "t", "instruction": "Install the Python extension.", "proxy": True,
                       "evaluator": {"func": "infeasible"}}, Path("t.json"))
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything) == [
        "the task declares `proxy: true`: it needs the web at run time, and tasks here run offline"]
    off = parse_osworld({"id": "t", "instruction": "x", "proxy": False, "evaluator": {"func": "infeasible"}},
                        Path("t.json"))
    assert why_not_runnable(off, cache_dir=None, step_types=ALL_STEPS, installed=everything) == []


def test_a_metric_option_or_rule_not_implemented_here_is_a_reason():
    rules = [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"},
             {"type": "sparkline", "sheet_idx0": 0, "sheet_idx1": "EI0"}]
    t = make(evaluator={"func": ["compare_table", "compare_pptx_files"],
                        "result": [{"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"},
                                   {"type": "vm_file", "path": "/home/user/a.pptx", "dest": "a.pptx"}],
                        "expected": [{"type": "rule", "rules": {}}, {"type": "rule", "rules": {}}],
                        "options": [{"rules": rules}, {"examine_shape_for_shift_size": True}]})
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything) == [
        "metric compare_table: not supported here: rules[1].type=sparkline",
        "metric compare_pptx_files: not supported here: examine_shape_for_shift_size=True"]
    t = make(evaluator={"func": "compare_table", "result": {"type": "vm_file", "path": "/home/user/a.xlsx",
                                                            "dest": "a.xlsx"},
                        "options": {"rules": rules[:1]}})
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything) == []


def test_a_libreoffice_task_scored_on_the_accessibility_tree_needs_libreoffice_in_that_tree():
    panel = {"func": "check_left_panel", "result": {"type": "accessibility_tree"}}  # libreoffice_impress/ef9d12bd
    launch = [{"type": "launch", "parameters": {"command": ["libreoffice", "--impress"]}}]
    t = make(config=launch, evaluator=panel, apps=("libreoffice_impress",))
    reason = ("getter accessibility_tree reads LibreOffice's windows only through a toolkit plugin that exposes "
              "them to AT-SPI, and this LibreOffice has none (apt-get install libreoffice-gtk3)")
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything,
                            office_accessible=lambda: False, atspi=readable) == [reason]
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything,
                            office_accessible=lambda: True, atspi=readable) == []
    # a launch of LibreOffice alone counts; a task on another application's tree does not ask
    launched = make(config=launch, evaluator=panel, apps=("os",))
    assert why_not_runnable(launched, cache_dir=None, step_types=ALL_STEPS, installed=everything,
                            office_accessible=lambda: False, atspi=readable) == [reason]
    tabs = {"func": "check_accessibility_tree", "result": {"type": "accessibility_tree"},
            "expected": {"type": "rule", "rules": [{"selectors": ["page-tab"]}]}}
    for apps in (("thunderbird",), ("thunderbird", "libreoffice_calc")):  # multi_apps/f5c13cdd: Thunderbird's part
        mail = make(evaluator=tabs, apps=apps)
        assert why_not_runnable(mail, cache_dir=None, step_types=ALL_STEPS, installed=everything,
                                office_accessible=lambda: False, atspi=readable) == []
    calc = make(evaluator=tabs, apps=("libreoffice_calc",))
    assert why_not_runnable(calc, cache_dir=None, step_types=ALL_STEPS, installed=everything,
                            office_accessible=lambda: False, atspi=readable) == [reason]


def test_a_cache_or_cloud_file_named_outside_the_tasks_cache_folder_is_a_reason(tmp_path):
    (tmp_path / "secret.txt").write_text("s")  # there and readable: the refusal is about the name, not the file
    t = make(evaluator={"func": ["compare_text_file", "exact_match"], "conj": "or",
                        "result": [{"type": "cache_file", "path": "../secret.txt"},
                                   {"type": "cache_file", "path": "/etc/hostname"}],
                        "expected": [{"type": "cloud_file", "path": GOLD, "dest": "../../secret.txt"},
                                     {"type": "rule", "rules": {"expected": "x"}}]})
    reasons = why_not_runnable(t, cache_dir=tmp_path / "cache", step_types=ALL_STEPS, installed=everything)
    assert reasons == [f"cloud file {GOLD}: PathEscape: ../../secret.txt is outside the task's cache folder (a name "
                       "there is relative to it)",
                       "cache file '../secret.txt': PathEscape: ../secret.txt is outside the task's cache folder (a "
                       "name there is relative to it)",
                       "cache file '/etc/hostname': PathEscape: /etc/hostname is outside the task's cache folder (a "
                       "name there is relative to it)"]


def test_a_step_keeping_its_output_outside_the_tasks_cache_folder_is_a_reason_and_needs_no_cache():
    t = make(config=[{"type": "execute", "parameters": {"command": "true", "stdout": "/etc/cron.d/x"}},
                     {"type": "command", "parameters": {"command": ["true"], "stdout": "ok.out"}}],
             evaluator={"func": "exact_match", "result": {"type": "cache_file", "path": "ok.out"},
                        "expected": {"type": "rule", "rules": {"expected": ""}}})
    assert why_not_runnable(t, cache_dir=None, step_types=ALL_STEPS, installed=everything) == [
        "the setup step keeps its command's stdout in '/etc/cron.d/x': PathEscape: /etc/cron.d/x is outside the "
        "task's cache folder (a name there is relative to it)"]


def test_a_getter_reading_over_atspi_without_pygobject_makes_the_task_not_runnable():
    # evals/osworld_local's terminal-arith: without PyGObject the terminal's text came back None and the task
    # scored 0 although the screen showed the answer
    terminal = make(evaluator={"func": "check_include_exclude", "result": {"type": "vm_terminal_output"},
                               "expected": {"type": "rule", "rules": {"include": ["42"], "exclude": []}}},
                    apps=("terminal",))
    missing = "PyGObject is not installed in this Python (…)"
    assert why_not_runnable(terminal, cache_dir=None, step_types=ALL_STEPS, installed=everything,
                            atspi=lambda: missing) == [
        f"getter vm_terminal_output reads the terminal's text over AT-SPI, which this install cannot: {missing}"]
    assert why_not_runnable(terminal, cache_dir=None, step_types=ALL_STEPS, installed=everything,
                            atspi=readable) == []
    tree = make(evaluator={"func": "check_accessibility_tree", "result": {"type": "accessibility_tree"},
                           "expected": {"type": "rule", "rules": [{"selectors": ["page-tab"]}]}},
                apps=("thunderbird",))
    assert why_not_runnable(tree, cache_dir=None, step_types=ALL_STEPS, installed=everything,
                            atspi=lambda: missing) == [
        f"getter accessibility_tree reads the accessibility tree over AT-SPI, which this install cannot: {missing}"]
    # a task that reads neither never asks
    asked = []
    assert why_not_runnable(make(), cache_dir=None, step_types=ALL_STEPS, installed=everything,
                            atspi=lambda: asked.append(1)) == [] and asked == []


def test_atspi_missing_names_pygobject_or_the_typelib_and_how_to_install_them(tmp_path, monkeypatch):
    from conway.machine.atspi import atspi_missing
    monkeypatch.delenv("GI_TYPELIB_PATH", raising=False)
    no_gi = atspi_missing(importable=lambda m: m != "gi", typelib_dirs=(str(tmp_path),))
    assert no_gi is not None and "PyGObject" in no_gi and "conway[atspi]" in no_gi and "libgirepository" in no_gi
    assert "Atspi-2.0 typelib" in atspi_missing(importable=lambda m: True, typelib_dirs=(str(tmp_path),))
    (tmp_path / "Atspi-2.0.typelib").write_bytes(b"")
    assert atspi_missing(importable=lambda m: True, typelib_dirs=(str(tmp_path),)) is None


def test_a_task_id_or_file_name_leading_out_of_the_cache_is_never_followed(tmp_path):
    from conway.tasks.cache import CacheEscape, cloud_path, download_path
    from conway.tasks.env import PathEscape
    cache = tmp_path / "cache"
    cache.mkdir()
    for call in (lambda: cloud_path(cache, "t", "../../escape.txt"), lambda: cloud_path(cache, "t", "/etc/passwd"),
                 lambda: cloud_path(cache, "../x", "a.txt"), lambda: download_path(cache, "..", DL, "/a.sh")):
        with pytest.raises(PathEscape):  # CacheEscape (an id) is a PathEscape too
            call()
    with pytest.raises(CacheEscape):
        cloud_path(cache, "../x", "a.txt")
    assert cloud_path(cache, "t", "sub/a.txt") == cache / "t" / "sub" / "a.txt"


def _cmd(command: str, postconfig=()) -> object:
    return make(config=[{"type": "execute", "parameters": {"command": command, "shell": True}}],
                evaluator={"func": "exact_match", "result": {"type": "vm_command_line", "command": "true"},
                           "expected": {"type": "rule", "rules": {"expected": ""}}, "postconfig": list(postconfig)})


def test_what_a_tasks_commands_need_of_the_system_is_named() -> None:
    """The five kinds OSWorld's tasks need and a disposable desktop cannot give (conway/tasks/system_needs.py);
    a package or schema that is installed here is no reason."""
    from conway.tasks.system_needs import system_reasons

    def reasons(task, packages=(), schemas=(), programs=()):
        return system_reasons(task, schemas=lambda: frozenset(schemas), packaged=lambda p: p in packages,
                              on_path=lambda p: p in programs)
    apt = _cmd("echo {CLIENT_PASSWORD} | sudo -S apt-get update && sudo -S apt-get install -y sysstat unzip")
    assert reasons(apt, packages=("unzip",)) == [
        "the setup command installs sysstat from the network (apt-get install), which the sandbox cannot; it is "
        "not installed here (apt-get install sysstat)"]
    assert reasons(apt, packages=("unzip", "sysstat")) == []
    favourites = _cmd("export DBUS_SESSION_BUS_ADDRESS='unix:path=/run/user/1000/bus'\n"
                      "gsettings set org.gnome.shell favorite-apps \"['a.desktop']\"")
    # OSWorld's bus path is no reason: the desktop's box serves its session bus at /run/user/1000/bus
    assert reasons(favourites) == [
        "the setup command uses the GSettings schema org.gnome.shell, which is not installed here (apt-get install "
        "gnome-shell-common)"]
    clock = make(evaluator={"func": "is_utc_0", "result": {"type": "vm_command_line", "command": "timedatectl status"},
                            "expected": {"type": "rule", "rules": {}}})
    assert reasons(clock) == ["the getter vm_command_line command runs timedatectl, which needs systemd (its "
                              "timedated), and the disposable desktop runs no systemd"]
    spotify = make(evaluator={"func": "check_include_exclude", "result": {"type": "vm_command_line",
                                                                          "command": "which spotify"},
                              "expected": {"type": "rule", "rules": {}}})
    assert reasons(spotify) == ["the checker asks `which spotify`: the task is solved by installing spotify, which "
                                "needs the network and a package manager, and the sandbox has neither"]
    assert reasons(spotify, programs=("spotify",)) == []
    sound = make(evaluator={"func": "exact_match", "result": {"type": "vm_command_line",
                                                              "command": "pulseaudio --start\npactl list sinks"},
                            "expected": {"type": "rule", "rules": {}}})
    assert reasons(sound) == ["the getter vm_command_line command uses PulseAudio (pactl), which is not installed "
                              "here (apt-get install pulseaudio pulseaudio-utils: the desktop's box then runs its "
                              "own sound server)"]
    assert reasons(sound, programs=("pulseaudio", "pactl")) == []


def test_a_checker_reading_what_only_a_download_gives_needs_the_web() -> None:
    """multi_apps e1fc0df3's checker greps the user's LibreOffice extensions (uno_packages) for LanguageTool: an
    agent installs that from an .oxt off the web, so offline it is not runnable, and with --network it is."""
    from conway.tasks.runnable import why_not_runnable
    from conway.tasks.system_needs import web_install_reasons

    grep = {"type": "command", "parameters": {"command": ["grep", "-nHr", "languagetool",
                                                          "/home/user/.config/libreoffice/4/user/uno_packages/"],
                                           "stdout": "grep.out"}}
    task = make(evaluator={"func": "check_list", "result": {"type": "cache_file", "path": "grep.out"},
                           "expected": {"type": "rule", "rules": {"expect": ["x"]}}, "postconfig": [grep]})
    assert web_install_reasons(task) == [
        "the postconfig command checks for a LibreOffice extension installed in the user's profile (uno_packages), "
        "whose .oxt file comes from the web (extensions.libreoffice.org), and tasks here run offline (tasks run "
        "--network lets the sandbox share this machine's network)"]
    quiet = dict(cache_dir=None, step_types={"command"}, installed=lambda a: True, importable=lambda m: True,
                 office_accessible=lambda: True, atspi=lambda: None, system=lambda t: [])
    assert why_not_runnable(task, **quiet) == web_install_reasons(task)
    assert why_not_runnable(task, network=True, **quiet) == []
    assert web_install_reasons(_cmd("ls ~/.config/libreoffice/4/user/uno_packages")) == []  # a setup's own step


def test_the_project_installs_the_schemas_and_packages_osworlds_tasks_name() -> None:
    """scripts/test.sh installs them where CI runs (apt); elsewhere the reasons above say what is missing."""
    import os

    import pytest

    from conway.tasks.system_needs import installed_schemas, package_installed

    wanted = ["gnome-shell-common", "gnome-settings-daemon-common", "sysstat", "xsel", "expect", "pulseaudio",
              "pulseaudio-utils", "orchis-gtk-theme"]
    missing = [p for p in wanted if not package_installed(p)]
    if missing and not os.environ.get("CONWAY_REQUIRE_DESKTOP"):
        pytest.skip(f"not installed here: {' '.join(missing)} (scripts/test.sh installs them)")
    assert not missing
    assert {"org.gnome.shell", "org.gnome.settings-daemon.plugins.power"} <= installed_schemas()


def test_a_desktops_readers_need_the_systems_pygobject_not_this_pythons(tmp_path):
    """A task desktop's AT-SPI readers run with the system's Python inside its box: Debian's python3-gi is what
    they need, whatever this interpreter has."""
    from conway.machine.atspi import desktop_atspi_missing
    (tmp_path / "Atspi-2.0.typelib").write_bytes(b"")
    gi = tmp_path / "gi" / "__init__.py"
    assert "apt-get install python3-gi" in desktop_atspi_missing((str(gi),), (str(tmp_path),))
    gi.parent.mkdir()
    gi.write_text("")
    assert desktop_atspi_missing((str(gi),), (str(tmp_path),)) is None
