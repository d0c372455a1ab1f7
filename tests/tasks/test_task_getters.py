"""Each getter on a real temporary home, through the test environment (real files, real processes)."""

from __future__ import annotations

import json
import os

import pytest
from helpers.extras import need_extra
from helpers.task_env import TestTaskEnv

from conway.tasks.cache import cloud_path
from conway.tasks.env import PathEscape, TaskEnv
from conway.tasks.getters import GETTERS


@pytest.fixture
def env(tmp_path) -> TestTaskEnv:
    home = tmp_path / "home"
    home.mkdir()
    return TestTaskEnv(home=home, task_id="t-1", cache_dir=tmp_path / "cache")


def test_the_test_environment_keeps_the_contract(env):
    assert isinstance(env, TaskEnv)


def test_vm_file_gives_the_host_path_or_none(env):
    (env.home / "Desktop").mkdir()
    (env.home / "Desktop" / "a.txt").write_text("A")
    assert GETTERS["vm_file"](env, {"path": "/home/user/Desktop/a.txt", "dest": "a.txt"}) == \
        str(env.home / "Desktop" / "a.txt")
    assert GETTERS["vm_file"](env, {"path": "~/Desktop/gone.txt", "dest": "gone.txt"}) is None
    assert GETTERS["vm_file"](env, {"path": "/home/user/Desktop", "dest": "d"}) is None  # a folder is no file


def test_vm_file_multi_and_gives(env):
    for name in ("x.xlsx", "x-Sheet1.csv"):
        (env.home / name).write_text(name)
    config = {"path": ["/home/user/x.xlsx", "/home/user/x-Sheet1.csv", "/home/user/none"],
              "dest": ["x.xlsx", "x-Sheet1.csv", "none"], "multi": True, "gives": [0, 1, 2]}
    assert GETTERS["vm_file"](env, config) == [str(env.home / "x.xlsx"), str(env.home / "x-Sheet1.csv"), None]
    assert GETTERS["vm_file"](env, {**config, "gives": [1]}) == str(env.home / "x-Sheet1.csv")
    without_gives = {k: v for k, v in config.items() if k != "gives"}  # OSWorld's default: the first file
    assert GETTERS["vm_file"](env, without_gives) == str(env.home / "x.xlsx")


def test_a_path_out_of_the_home_is_refused(env, tmp_path):
    (tmp_path / "secret.txt").write_text("no")
    with pytest.raises(PathEscape):
        GETTERS["vm_file"](env, {"path": "/etc/passwd", "dest": "p"})
    with pytest.raises(PathEscape):
        GETTERS["vm_file"](env, {"path": "~/../secret.txt", "dest": "s"})
    (env.home / "link").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(PathEscape):
        GETTERS["vm_file"](env, {"path": "/home/user/link", "dest": "s"})


def test_cloud_file_reads_the_cache_in_osworlds_layout(env):
    gold = cloud_path(env.cache_dir, env.task_id, "gold.txt")
    gold.parent.mkdir(parents=True)
    gold.write_text("gold")
    url = "https://example.org/gold.txt"
    assert GETTERS["cloud_file"](env, {"path": url, "dest": "gold.txt"}) == str(gold)
    with pytest.raises(FileNotFoundError, match="https://example.org/other.txt"):
        GETTERS["cloud_file"](env, {"path": "https://example.org/other.txt", "dest": "other.txt"})
    gold.with_name("b.csv").write_text("b")
    both = {"path": [url, "https://example.org/b.csv"], "dest": ["gold.txt", "b.csv"], "multi": True, "gives": [0, 1]}
    assert GETTERS["cloud_file"](env, both) == [str(gold), str(gold.with_name("b.csv"))]


def test_cloud_and_cache_files_without_a_cache_say_so(env):
    env.cache_dir = None
    with pytest.raises(FileNotFoundError, match="--cache"):
        GETTERS["cloud_file"](env, {"path": "https://example.org/a", "dest": "a"})
    with pytest.raises(FileNotFoundError, match="--cache"):
        GETTERS["cache_file"](env, {"path": "grep.out"})


def test_cache_file(env):
    out = cloud_path(env.cache_dir, env.task_id, "grep.out")
    out.parent.mkdir(parents=True)
    out.write_text("found\n")
    assert GETTERS["cache_file"](env, {"path": "grep.out"}) == str(out)
    with pytest.raises(FileNotFoundError, match="apt.out"):
        GETTERS["cache_file"](env, {"path": "apt.out"})


def test_cache_and_cloud_file_names_never_leave_the_tasks_cache_folder(env, tmp_path):
    """A task file naming an absolute path or climbing out with `..` must not read a host file (or another task's
    cached one) into a comparison: each is refused, though the file is there and readable."""
    secret = tmp_path / "secret.txt"
    secret.write_text("root-only, say")
    other = cloud_path(env.cache_dir, "t-2", "gold.txt")
    other.parent.mkdir(parents=True)
    other.write_text("another task's")
    own = cloud_path(env.cache_dir, env.task_id, "sub/ok.txt")
    own.parent.mkdir(parents=True)
    own.write_text("fine")
    for name in (str(secret), "../t-2/gold.txt", "../../secret.txt", "sub/../../t-2/gold.txt", "/etc/passwd", ""):
        with pytest.raises(PathEscape):
            GETTERS["cache_file"](env, {"path": name})
        with pytest.raises(PathEscape):
            GETTERS["cloud_file"](env, {"path": "https://example.org/x", "dest": name})
    multi = {"path": ["https://example.org/ok", "https://example.org/x"], "dest": ["sub/ok.txt", str(secret)],
             "multi": True, "gives": [0]}
    with pytest.raises(PathEscape):  # one bad name refuses the getter, though it would hand over only the first
        GETTERS["cloud_file"](env, multi)
    assert GETTERS["cache_file"](env, {"path": "sub/./ok.txt"}) == str(own)  # inside stays allowed


def test_cache_file_reads_a_kept_output_from_the_home_and_anything_else_from_the_cache_only(env):
    """The desktop writes in the home: a name no step of the task keeps (a gold file) is never read there, or
    the agent could plant it; a name a step keeps is never read from the cache (OSWorld's runs leave theirs)."""
    planted = env.home / ".task-cache" / "gold.txt"
    planted.parent.mkdir()
    planted.write_text("what the agent wrote")
    gold = cloud_path(env.cache_dir, env.task_id, "gold.txt")
    gold.parent.mkdir(parents=True)
    gold.write_text("the gold")
    assert GETTERS["cache_file"](env, {"path": "gold.txt"}) == str(gold)
    stale = cloud_path(env.cache_dir, env.task_id, "grep.out")
    stale.write_text("an old OSWorld run's output")
    with pytest.raises(FileNotFoundError, match="the step that keeps it wrote no /home/user/.task-cache/grep.out"):
        GETTERS["cache_file"](env, {"path": "grep.out"}, {"grep.out"})
    (env.home / ".task-cache" / "grep.out").write_text("this run's")
    assert GETTERS["cache_file"](env, {"path": "grep.out"}, {"grep.out"}) == str(env.home / ".task-cache" / "grep.out")
    with pytest.raises(PathEscape):
        GETTERS["cache_file"](env, {"path": "../../x"}, {"../../x"})


def test_rule_hands_the_rules_over(env):
    assert GETTERS["rule"](env, {"type": "rule", "rules": {"expected": "x"}}) == {"expected": "x"}


def test_vm_command_line_and_error_run_real_commands_in_the_home(env):
    (env.home / "Desktop").mkdir()
    cmd = "[ -d ~/Desktop ] && echo 'Directory exists.'; echo oops >&2"
    assert GETTERS["vm_command_line"](env, {"command": cmd, "shell": True}) == "Directory exists.\n"
    assert GETTERS["vm_command_error"](env, {"command": cmd, "shell": True}) == "oops\n"
    assert GETTERS["vm_command_line"](env, {"command": ["pwd"]}) == f"{env.home}\n"


def test_a_command_getter_is_bounded(env, monkeypatch):
    from conway.tasks import getters
    monkeypatch.setattr(getters, "COMMAND_TIMEOUT_S", 0.5)
    with pytest.raises(TimeoutError, match="0.5 s"):
        GETTERS["vm_command_line"](env, {"command": "sleep 30", "shell": True})


def test_list_directory_gives_osworlds_tree(env, tmp_path):
    root = env.home / "Desktop" / "cpjpg"
    (root / "sub").mkdir(parents=True)
    (root / "a.jpg").write_text("x")
    (root / "sub" / "b.jpg").write_text("y")
    (root / "out").symlink_to(tmp_path)  # listed as an entry, never followed out of the home
    tree = GETTERS["list_directory"](env, {"path": "/home/user/Desktop/cpjpg"})
    assert tree["type"] == "directory" and tree["name"] == "cpjpg"
    kids = {c["name"]: c for c in tree["children"]}
    assert kids["a.jpg"] == {"type": "file", "name": "a.jpg"} and kids["out"]["type"] == "file"
    assert kids["sub"]["children"] == [{"type": "file", "name": "b.jpg"}]
    assert GETTERS["list_directory"](env, {"path": "~/Desktop/none"}) is None


def test_vm_terminal_output_is_the_environments(env):
    assert GETTERS["vm_terminal_output"](env, {}) is None
    env.terminal_text = "user@host:~$ ls\nDesktop\n"
    assert GETTERS["vm_terminal_output"](env, {}) == "user@host:~$ ls\nDesktop\n"


def test_a_command_that_cannot_start_is_an_error_not_a_missing_file(env):
    with pytest.raises(RuntimeError, match="could not start"):
        GETTERS["vm_command_line"](env, {"command": ["no-such-program-here", "x"]})


def test_vlc_config_and_gimp_config_file_read_the_home_where_osworlds_vm_keeps_them(env):
    with pytest.raises(FileNotFoundError):  # a missing settings file is a missing result
        GETTERS["vlc_config"](env, {"dest": "vlcrc"})
    (env.home / ".config" / "vlc").mkdir(parents=True)
    (env.home / ".config" / "vlc" / "vlcrc").write_text("qt-bgcone=0\n")
    assert GETTERS["vlc_config"](env, {"dest": "vlcrc"}) == str(env.home / ".config" / "vlc" / "vlcrc")
    (env.home / ".config" / "GIMP" / "2.10").mkdir(parents=True)
    (env.home / ".config" / "GIMP" / "2.10" / "gimprc").write_text("(undo-levels 100)\n")
    config = {"file_name": "gimprc", "dest": "gimprc"}
    assert GETTERS["gimp_config_file"](env, config) == str(env.home / ".config" / "GIMP" / "2.10" / "gimprc")
    with pytest.raises(FileNotFoundError):
        GETTERS["gimp_config_file"](env, {"file_name": "sessionrc", "dest": "sessionrc"})
    with pytest.raises(PathEscape):
        GETTERS["gimp_config_file"](env, {"file_name": "../../../../../etc/passwd", "dest": "p"})


def _profile(env, browser: str, name: str, content: str) -> None:
    folder = env.home / ".config" / browser / "Default"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(content)


def test_the_browser_profile_getters_fall_back_as_osworlds_do(env):
    assert GETTERS["default_search_engine"](env, {}) == "Google"
    assert GETTERS["profile_name"](env, {}) is None
    assert GETTERS["enable_do_not_track"](env, {}) == "false"
    assert GETTERS["enable_safe_browsing"](env, {}) == "false"
    assert GETTERS["new_startup_page"](env, {}) == "Google"
    assert GETTERS["data_delete_automacally"](env, {}) == "Google"
    assert GETTERS["chrome_font_size"](env, {}) == {"default_fixed_font_size": 13, "default_font_size": 16}
    assert GETTERS["bookmarks"](env, {}) == []
    _profile(env, "chromium", "Preferences", "not json")
    assert GETTERS["default_search_engine"](env, {}) == "Google"


def test_the_browser_profile_getters_read_chromium_or_chrome(env):
    prefs = {"default_search_provider_data": {"template_url_data": {"short_name": "Bing"}},
             "profile": {"name": "Thomas", "default_content_setting_values": {"cookies": 4}},
             "enable_do_not_track": True, "safebrowsing": {"enhanced": True},
             "session": {"restore_on_startup": 5}, "webkit": {"webprefs": {"default_font_size": 20}}}
    _profile(env, "chromium", "Preferences", json.dumps(prefs))
    assert GETTERS["default_search_engine"](env, {}) == "Bing"
    assert GETTERS["profile_name"](env, {}) == "Thomas"
    assert [GETTERS[g](env, {}) for g in ("enable_do_not_track", "enable_safe_browsing", "new_startup_page",
                                         "data_delete_automacally")] == ["true"] * 4
    assert GETTERS["chrome_font_size"](env, {}) == {"default_font_size": 20}
    _profile(env, "google-chrome", "Preferences", json.dumps({"session": {"restore_on_startup": 1}}))
    assert GETTERS["new_startup_page"](env, {}) == "false"  # OSWorld's Chrome profile is read first
    assert GETTERS["default_search_engine"](env, {}) == "Google"
    _profile(env, "chromium", "Bookmarks", json.dumps({"roots": {"bookmark_bar": {"children": []}}}))
    assert GETTERS["bookmarks"](env, {}) == {"bookmark_bar": {"children": []}}
    _profile(env, "chromium", "Bookmarks", "{")
    with pytest.raises(ValueError):  # OSWorld's getter raises on a Bookmarks file that is not JSON
        GETTERS["bookmarks"](env, {})


def test_the_extension_getters_list_the_profiles_extensions(env):
    assert GETTERS["find_unpacked_extension_path"](env, {}) == "Google"  # OSWorld's fallback without preferences
    settings = {"abc": {"path": "/home/user/Desktop/helloExtension", "manifest": {"name": "Hello"}},
                "def": {"path": "def/1.0_0", "manifest": {"name": "Zoom for Google Chrome"}}}
    _profile(env, "chromium", "Preferences", json.dumps({"extensions": {"settings": settings}}))
    assert GETTERS["find_unpacked_extension_path"](env, {}) == ["/home/user/Desktop/helloExtension", "def/1.0_0"]
    assert GETTERS["find_installed_extension_name"](env, {}) == ["Hello", "Zoom for Google Chrome"]
    _profile(env, "chromium", "Preferences", json.dumps({"extensions": {"settings": {"x": {"manifest": {}}}}}))
    assert GETTERS["find_installed_extension_name"](env, {}) == "Google"  # an entry without its name


def test_shortcuts_on_desktop_reads_the_desktop_files(env):
    with pytest.raises(FileNotFoundError):  # no Desktop folder: OSWorld's getter fails too
        GETTERS["shortcuts_on_desktop"](env, {})
    (env.home / "Desktop").mkdir()
    assert GETTERS["shortcuts_on_desktop"](env, {}) == {}
    (env.home / "Desktop" / "game.desktop").write_text("[Desktop Entry]\nName=2048\n")
    (env.home / "Desktop" / "notes.txt").write_text("no")
    assert GETTERS["shortcuts_on_desktop"](env, {}) == {"game.desktop": "[Desktop Entry]\nName=2048\n"}
    (env.home / "Desktop" / "out.desktop").symlink_to(env.home.parent / "secret.desktop")
    (env.home.parent / "secret.desktop").write_text("Name=secret\n")
    with pytest.raises(PathEscape):
        GETTERS["shortcuts_on_desktop"](env, {})


def test_history_and_cookie_data_read_a_copy_of_the_browsers_databases(env):
    import sqlite3
    assert GETTERS["history"](env, {"dest": "h"}) is None and GETTERS["cookie_data"](env, {"dest": "c"}) is None
    folder = env.home / ".config" / "chromium" / "Default"
    (folder / "Network").mkdir(parents=True)
    with sqlite3.connect(folder / "History") as db:
        db.execute("CREATE TABLE urls (id INTEGER, url TEXT, title TEXT, last_visit_time INTEGER)")
        db.execute("INSERT INTO urls VALUES (1, 'https://www.youtube.com/watch?v=x', 'Video', 42)")
    db.close()
    assert GETTERS["history"](env, {"dest": "h"}) == [("https://www.youtube.com/watch?v=x", "Video", 42)]
    with sqlite3.connect(folder / "Network" / "Cookies") as db:
        db.execute("CREATE TABLE cookies (creation_utc INTEGER, host_key TEXT, name TEXT)")
        db.execute("INSERT INTO cookies VALUES (1, '.amazon.com', 'session')")
    db.close()
    assert GETTERS["cookie_data"](env, {"dest": "c"}) == [(1, ".amazon.com", "session")]
    (folder / "History").write_text("not a database")
    assert GETTERS["history"](env, {"dest": "h"}) is None


def test_default_video_player_counts_what_xdg_mime_names(env, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "xdg-mime"  # VLC for every type but WebM, which a browser holds
    fake.write_text('#!/bin/sh\ncase "$3" in video/webm) echo firefox.desktop;; video/x-nsv) ;; '
                    '*) echo vlc.desktop;; esac\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    assert GETTERS["default_video_player"](env, {}) == "vlc.desktop\n"
    fake.write_text("#!/bin/sh\nexit 1\n")
    assert GETTERS["default_video_player"](env, {}) == "unknown"


def test_the_screen_and_window_size_getters_read_xdotool(env, tmp_path, monkeypatch):
    bin_dir = tmp_path / "xbin"
    bin_dir.mkdir()
    fake = bin_dir / "xdotool"  # one VLC window, class "vlc", 1024x768 on a 1920x1080 screen
    fake.write_text('#!/bin/sh\ncase "$1" in\n getdisplaygeometry) echo "1920 1080";;\n'
                    ' search) [ "$3" = "--class" ] && [ "$4" = "^vlc$" ] && echo 4194310;;\n'
                    ' getwindowgeometry) printf "Window 4194310\\n  Position: 0,0 (screen: 0)\\n  Geometry: 1024x768\\n";;\n'
                    'esac\nexit 0\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    assert GETTERS["vm_screen_size"](env, {}) == {"width": 1920, "height": 1080}
    assert GETTERS["vm_window_size"](env, {"app_class_name": "vlc"}) == {"width": 1024, "height": 768}
    assert GETTERS["vm_window_size"](env, {"app_class_name": "gimp"}) is None


def test_is_vlc_fullscreen_compares_the_two_sizes():
    from conway.tasks.metrics import METRICS
    metric = METRICS["is_vlc_fullscreen"]
    assert metric({"width": 1920, "height": 1080}, {"width": 1920, "height": 1080}) == 1.0
    assert metric({"width": 1920, "height": 1080}, {"width": 1024, "height": 768}) == 0.0
    assert metric({"width": 1920, "height": 1080}, None) == 0.0 and metric(None, {"width": 1, "height": 1}) == 0.0


def test_the_appearance_mode_is_read_from_the_preferences(env):
    assert GETTERS["chrome_appearance_mode_ui"](env, {}) == "system"  # no profile: OSWorld's last answer
    for theme, expected in (({"browser": {"theme": {"color_scheme2": 2}}}, "dark"),
                            ({"browser": {"theme": {"color_scheme": 1}}}, "light"),
                            ({"browser": {"theme": {"color_scheme2": "Default"}}}, "system"),
                            ({"browser": {"theme": {"color_scheme2": 2}}, "extensions": {"theme": {"system_theme": 0}}},
                             "light"),
                            ({"browser": {"theme": {"color_scheme2": 7}}}, "system")):
        _profile(env, "chromium", "Preferences", json.dumps(theme))
        assert GETTERS["chrome_appearance_mode_ui"](env, {}) == expected, theme
    _profile(env, "chromium", "Preferences", "not json")
    assert GETTERS["chrome_appearance_mode_ui"](env, {}) == "system"


def test_content_from_vm_file_gives_an_xlsx_last_row_as_texts(env):
    openpyxl = need_extra("tasks", "openpyxl")
    book = openpyxl.Workbook()
    for row in (["Name", "Citations"], ["Ada", 10], ["Yann", 345074]):
        book.active.append(row)
    book.save(env.home / "r.xlsx")
    config = {"path": "/home/user/r.xlsx", "file_type": "xlsx", "file_content": "last_row"}
    assert GETTERS["content_from_vm_file"](env, config) == ["Yann", "345074"]
    with pytest.raises(FileNotFoundError):
        GETTERS["content_from_vm_file"](env, {**config, "path": "/home/user/none.xlsx"})
    with pytest.raises(NotImplementedError):  # OSWorld's getter reads only this one kind
        GETTERS["content_from_vm_file"](env, {**config, "file_type": "csv"})


def _deck_with_background(path, png):
    """A one-slide deck whose slide has `png` as its background picture (python-pptx adds the picture's part and
    relationship; the slide's <p:bg> is written to use it)."""
    import zipfile

    import pptx
    prs = pptx.Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    rid = slide.shapes.add_picture(str(png), 0, 0)._element.blipFill.blip.rEmbed
    prs.save(path)
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    bg = (f'<p:bg><p:bgPr><a:blipFill><a:blip r:embed="{rid}"/></a:blipFill><a:effectLst/></p:bgPr></p:bg>')
    parts["ppt/slides/slide1.xml"] = parts["ppt/slides/slide1.xml"].replace(b"<p:cSld>", b"<p:cSld>" + bg.encode())
    with zipfile.ZipFile(path, "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)


def test_background_image_in_slide_extracts_the_picture(env):
    from PIL import Image
    need_extra("tasks", "pptx")
    Image.new("RGB", (8, 8), (0, 128, 255)).save(env.home / "bg.png")
    _deck_with_background(env.home / "d.pptx", env.home / "bg.png")
    got = GETTERS["background_image_in_slide"](env, {"ppt_file_path": "/home/user/d.pptx", "slide_index": 0,
                                                     "dest": "bg.png"})
    assert open(got, "rb").read() == (env.home / "bg.png").read_bytes()
    assert GETTERS["background_image_in_slide"](env, {"ppt_file_path": "/home/user/d.pptx", "slide_index": 1,
                                                      "dest": "x"}) is None  # no such slide
    import pptx
    pptx.Presentation().save(env.home / "plain.pptx")
    assert GETTERS["background_image_in_slide"](env, {"ppt_file_path": "/home/user/plain.pptx", "slide_index": 0,
                                                      "dest": "x"}) is None


def _deck_with_audio(path, target):
    """A one-slide deck whose slide's relationships name an audio `target` (a part's `../media/…` or a file:// link),
    as LibreOffice writes a slide with a sound; the part itself is added for a relative target."""
    import zipfile

    import pptx
    prs = pptx.Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])
    prs.save(path)
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    rels = parts["ppt/slides/_rels/slide1.xml.rels"]
    mode = "" if target.startswith("..") else ' TargetMode="External"'
    link = (f'<Relationship Id="rIdA" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/audio" '
            f'Target="{target}"{mode}/>').encode()
    parts["ppt/slides/_rels/slide1.xml.rels"] = rels.replace(b"</Relationships>", link + b"</Relationships>")
    if target.startswith(".."):
        parts["ppt/media/" + target.rsplit("/", 1)[1]] = b"ID3 the sound"
    with zipfile.ZipFile(path, "w") as z:
        for n, data in parts.items():
            z.writestr(n, data)


def test_audio_in_slide_extracts_or_follows_the_sound(env):
    need_extra("tasks", "pptx")
    _deck_with_audio(env.home / "d.pptx", "../media/media1.mp3")
    config = {"ppt_file_path": "/home/user/d.pptx", "slide_index": 0, "dest": "Baseball.mp3"}
    got = GETTERS["audio_in_slide"](env, config)
    assert got.endswith("ppt/media/media1.mp3") and open(got, "rb").read() == b"ID3 the sound"
    assert GETTERS["audio_in_slide"](env, {**config, "slide_index": 3}) is None  # no such slide
    (env.home / "Desktop").mkdir()
    (env.home / "Desktop" / "b.mp3").write_bytes(b"linked")
    _deck_with_audio(env.home / "linked.pptx", "file:///home/user/Desktop/b.mp3")
    linked = {**config, "ppt_file_path": "/home/user/linked.pptx"}
    assert GETTERS["audio_in_slide"](env, linked) == str(env.home / "Desktop" / "b.mp3")
    _deck_with_audio(env.home / "gone.pptx", "file:///home/user/Desktop/none.mp3")
    assert GETTERS["audio_in_slide"](env, {**config, "ppt_file_path": "/home/user/gone.pptx"}) is None
    _deck_with_audio(env.home / "out.pptx", "file:///etc/passwd")
    with pytest.raises(PathEscape):  # a link out of the home is never followed
        GETTERS["audio_in_slide"](env, {**config, "ppt_file_path": "/home/user/out.pptx"})
    import pptx
    pptx.Presentation().save(env.home / "plain.pptx")
    assert GETTERS["audio_in_slide"](env, {**config, "ppt_file_path": "/home/user/plain.pptx"}) is None
