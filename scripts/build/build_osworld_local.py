"""Write the shipped task suite evals/osworld_local/: OSWorld-format tasks, their cache, two scripted policies each.

    python -m scripts.build.build_osworld_local            (from the repository root; rewrites the folder's
                                                            examples/, cache/, mock/ and test_all.json)

Every task is an OSWorld task file (`evaluation_examples/examples/<domain>/<id>.json` layout, the index
`test_all.json` beside it) on light Debian applications: the shell and file system, LXTerminal, Mousepad,
Chromium, and office documents made here with python-docx, python-pptx and openpyxl. Files a task downloads
or compares against sit in `cache/` in OSWorld's cache layout (`conway.tasks.cache`), so `--cache
evals/osworld_local/cache` serves them exactly as a cache OSWorld wrote would. Each task has two mock
scripts: `mock/pass/<id>.yaml` does the task (the checker scores 1), `mock/fail/<id>.yaml` does nothing or
the wrong thing (0). The download URLs name a reserved example host: nothing is ever fetched.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from conway.tasks.cache import cloud_path, download_path

ROOT = Path(__file__).resolve().parents[2] / "evals" / "osworld_local"
HOST = "https://files.conway.example/osworld_local"
"""A reserved example host (RFC 2606): the URLs only name the cached files."""


def url(task_id: str, name: str) -> str:
    return f"{HOST}/{task_id}/{name}"


def step(kind: str, **parameters: Any) -> dict[str, Any]:
    return {"type": kind, "parameters": parameters}


def shell(command: str) -> dict[str, Any]:
    return step("execute", command=command, shell=True)


def rule(rules: Any) -> dict[str, Any]:
    return {"type": "rule", "rules": rules}


def command_line(command: str) -> dict[str, Any]:
    return {"type": "vm_command_line", "command": command, "shell": True}


def act(kind: str, **fields: Any) -> dict[str, Any]:
    return {"action": {"type": kind, **fields}}


def done(message: str = "done") -> dict[str, Any]:
    return act("finish", status="DONE", message=message)


def sh(command: str) -> dict[str, Any]:
    return act("shell", command=command)


# --- documents made here (tiny, deterministic) -------------------------------------------


def docx_bytes(paragraphs: list[str]) -> bytes:
    import docx

    doc = docx.Document()
    for text in paragraphs:
        doc.add_paragraph(text)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def pptx_bytes(slides: list[tuple[str, str]]) -> bytes:
    from pptx import Presentation

    prs = Presentation()
    for title, body in slides:
        slide = prs.slides.add_slide(prs.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def xlsx_bytes(rows: list[list[Any]], sheet: str = "Sheet1") -> bytes:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = sheet
    for row in rows:
        ws.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


# --- the tasks ---------------------------------------------------------------------------------
# Each: (domain, task json, cache files {dest-or-name: bytes} with how they are keyed, pass script, fail script)


class Suite:
    def __init__(self) -> None:
        self.tasks: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]] = []
        self.downloads: list[tuple[str, str, str, bytes]] = []  # (task id, url, guest path, bytes)
        self.cloud: list[tuple[str, str, bytes]] = []  # (task id, dest, bytes)

    def add(self, domain: str, task_id: str, instruction: str, *, config: list[dict[str, Any]],
            evaluator: dict[str, Any], apps: list[str], passing: list[dict[str, Any]],
            failing: list[dict[str, Any]], **extra: Any) -> None:
        task = {"id": task_id, "snapshot": domain, "instruction": instruction,
                "source": "conway: evals/osworld_local (scripts/build/build_osworld_local.py)",
                "config": config, "related_apps": apps, "evaluator": evaluator, **extra}
        self.tasks.append((domain, task, passing, failing))

    def download(self, task_id: str, name: str, guest: str, data: bytes) -> dict[str, Any]:
        link = url(task_id, name)
        self.downloads.append((task_id, link, guest, data))
        return {"url": link, "path": guest}

    def cloud_file(self, task_id: str, dest: str, data: bytes) -> dict[str, Any]:
        self.cloud.append((task_id, dest, data))
        return {"type": "cloud_file", "path": url(task_id, dest), "dest": dest}

    def cache_file(self, task_id: str, name: str, data: bytes) -> dict[str, Any]:
        self.cloud.append((task_id, name, data))  # the same place: <cache>/<task id>/<name>
        return {"type": "cache_file", "path": name}


def build(s: Suite) -> None:
    """Every task of the suite, in the order test_all.json lists them."""
    add_os_terminal_tasks(s)
    add_os_file_tasks(s)
    add_os_answer_file_tasks(s)
    add_os_text_edit_tasks(s)
    add_os_infeasible_task(s)
    add_mousepad_tasks(s)
    add_chrome_tasks(s)
    add_office_pick_tasks(s)
    add_office_csv_task(s)


def add_os_terminal_tasks(s: Suite) -> None:
    """The os domain in the open terminal: its output is what the checker reads."""
    s.add("os", "terminal-arith",
          "In the open terminal, let the shell compute 6 times 7 and print the result with the prefix ANSWER= "
          "(for example ANSWER=12).",
          config=[step("launch", command=["lxterminal"]),
                  step("activate_window", window_name="lxterminal", by_class=True)],
          evaluator={"func": "check_include_exclude", "result": {"type": "vm_terminal_output"},
                     "expected": rule({"include": ["ANSWER=42"], "exclude": []})},
          apps=["os"],
          passing=[act("type", text="echo ANSWER=$((6*7))\n"), done("printed ANSWER=42")],
          failing=[act("type", text="echo ANSWER=$((6*8))\n"), done()])
    s.add("os", "terminal-show-file",
          "A terminal is open. Show the contents of the file secret.txt in the home folder in that terminal.",
          config=[shell("printf 'the code is TOKEN-81273\\n' > ~/secret.txt"),
                  step("launch", command="lxterminal --working-directory=/home/user"),
                  step("activate_window", window_name="lxterminal", by_class=True)],
          evaluator={"func": "check_include_exclude", "result": {"type": "vm_terminal_output"},
                     "expected": rule({"include": ["TOKEN-81273"], "exclude": ["No such file"]})},
          apps=["os"],
          passing=[act("type", text="cat ~/secret.txt\n"), done("shown")],
          failing=[act("type", text="ls\n"), done()])


def add_os_file_tasks(s: Suite) -> None:
    """The os domain's files and commands: folders, a copy, a permission, a script's typo."""
    s.add("os", "make-folders",
          "Create the folder Desktop/reports/2026 in my home folder (with any folders it needs).",
          config=[shell("mkdir -p ~/Desktop")],
          evaluator={"func": ["exact_match", "check_include_exclude"], "conj": "and",
                     "result": [command_line("test -d ~/Desktop/reports/2026 && echo present || echo absent"),
                                command_line("ls ~/Desktop/reports")],
                     "expected": [rule({"expected": "present\n"}), rule({"include": ["2026"], "exclude": []})]},
          apps=["os"],
          passing=[sh("mkdir -p ~/Desktop/reports/2026"), done()],
          failing=[sh("mkdir -p ~/Desktop/report/2026"), done()])
    s.add("os", "keep-the-jpg",
          "Under ~/photos there is exactly one .jpg file somewhere. Copy it into a new folder ~/keep, and nothing "
          "else.",
          config=[shell("mkdir -p ~/photos/2025/summer ~/photos/misc && printf 'jpg' > ~/photos/2025/summer/beach.jpg"
                        " && printf 'png' > ~/photos/misc/map.png && printf 'txt' > ~/photos/notes.txt")],
          evaluator={"func": "check_direct_json_object", "result": {"type": "list_directory", "path": "/home/user/keep"},
                     "expected": rule({"expected": {"type": "directory", "name": "keep",
                                                    "children": [{"type": "file", "name": "beach.jpg"}]}})},
          apps=["os"],
          passing=[sh("mkdir -p ~/keep && find ~/photos -name '*.jpg' -exec cp {} ~/keep/ \\;"), done()],
          failing=[sh("mkdir -p ~/keep && cp ~/photos/misc/map.png ~/keep/"), done()])
    s.add("os", "make-executable",
          "Make the script ~/bin/run.sh executable by its owner; leave the other permissions as they are.",
          config=[step("command", command="mkdir -p ~/bin && printf '#!/bin/sh\\necho ran\\n' > ~/bin/run.sh && "
                                          "chmod 644 ~/bin/run.sh", shell=True)],
          evaluator={"func": "match_in_list", "result": command_line("stat -c %A ~/bin/run.sh"),
                     "expected": rule({"expected": ["-rwxr--r--\n", "-rwxr-xr-x\n", "-rwxrwxr-x\n"]})},
          apps=["os"],
          passing=[sh("chmod u+x ~/bin/run.sh"), done()],
          failing=[sh("chmod 600 ~/bin/run.sh"), done()])
    s.add("os", "fix-python-script",
          "The Python script ~/app.py fails when it runs. Fix the typo in it so that `python3 ~/app.py` runs "
          "without an error.",
          config=[shell("printf 'total = 2 + 3\\npritn(total)\\n' > ~/app.py")],
          evaluator={"func": "check_include_exclude",
                     "result": {"type": "vm_command_error", "command": "python3 /home/user/app.py", "shell": True},
                     "expected": rule({"include": [], "exclude": ["Error", "Traceback"]})},
          apps=["os"],
          passing=[act("replace_text", path="~/app.py", old="pritn(total)", new="print(total)"), done()],
          failing=[act("read_file", path="~/app.py"), done()])


def add_os_answer_file_tasks(s: Suite) -> None:
    """The os domain's answers in files: a count, a setting, a JSON object, a summary."""
    words = "".join(f"{w}\n" for w in ("amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet"))
    s.add("os", "count-lines",
          "How many lines does ~/data/words.txt have? Write just that number into ~/count.txt.",
          config=[step("download", files=[s.download("count-lines", "words.txt", "/home/user/data/words.txt",
                                                     words.encode())])],
          evaluator={"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/count.txt",
                                                             "dest": "count.txt"},
                     "expected": s.cloud_file("count-lines", "count_gold.txt", b"7\n"),
                     "options": {"ignore_blanks": True}},
          apps=["os"],
          passing=[sh("wc -l < ~/data/words.txt > ~/count.txt"), done()],
          failing=[sh("echo 6 > ~/count.txt"), done()])
    s.add("os", "edit-settings",
          "In the settings file ~/.config/notes/settings.json, switch the theme to dark and turn autosave on. "
          "Keep the other settings.",
          config=[shell("mkdir -p ~/.config/notes && printf '{\"theme\": \"light\", \"autosave\": false, "
                        "\"font_size\": 12}\\n' > ~/.config/notes/settings.json")],
          evaluator={"func": "check_json_settings",
                     "result": {"type": "vm_file", "path": "/home/user/.config/notes/settings.json",
                                "dest": "settings.json"},
                     "expected": rule({"expected": {"theme": "dark", "autosave": True, "font_size": 12}})},
          apps=["os"],
          passing=[act("replace_text", path="~/.config/notes/settings.json", old='"light"', new='"dark"'),
                   act("replace_text", path="~/.config/notes/settings.json", old="false", new="true"), done()],
          failing=[act("replace_text", path="~/.config/notes/settings.json", old='"light"', new='"dark"'), done()])
    s.add("os", "describe-home",
          "Write a JSON object to ~/answer.json with two keys: \"home\", the path of the home folder, and "
          "\"files\", how many regular files are directly in ~/inbox (a number).",
          config=[shell("mkdir -p ~/inbox && touch ~/inbox/a.eml ~/inbox/b.eml ~/inbox/c.eml")],
          evaluator={"func": "check_direct_json_object", "result": command_line("cat ~/answer.json"),
                     "expected": rule({"expected": {"home": "/home/user", "files": 3}})},
          apps=["os"],
          passing=[sh("printf '{\"home\": \"%s\", \"files\": %d}\\n' \"$HOME\" \"$(ls ~/inbox | wc -l)\" "
                      "> ~/answer.json"), done()],
          failing=[sh("printf '{\"home\": \"/root\", \"files\": 3}\\n' > ~/answer.json"), done()])
    s.add("os", "summarise-note",
          "Read ~/meeting.txt and write its one-line summary, exactly as the note's last line gives it, into "
          "~/summary.txt.",
          config=[shell("printf 'Minutes, 3 March.\\nPresent: Ada, Grace.\\nSummary: The review meeting moves to "
                        "Thursday at 10 am.\\n' > ~/meeting.txt"), step("sleep", seconds=0.2)],
          evaluator={"func": "fuzzy_match", "result": command_line("cat ~/summary.txt"),
                     "expected": rule({"expected": "The review meeting moves to Thursday at 10 am."})},
          apps=["os"],
          passing=[sh("tail -n 1 ~/meeting.txt | sed 's/^Summary: //' | tr -d '\\n' > ~/summary.txt"), done()],
          failing=[done("nothing to do")])
    s.add("os", "count-inbox",
          "How many files are there in ~/inbox? Write only the number, without a newline, into ~/inbox-count.txt.",
          config=[shell("mkdir -p ~/inbox && touch ~/inbox/one ~/inbox/two ~/inbox/three ~/inbox/four")],
          evaluator={"func": "literal_match", "result": command_line("cat ~/inbox-count.txt"),
                     "expected": rule("4"), "options": {"type": "str", "ignore_case": True}},
          apps=["os"],
          passing=[sh("ls ~/inbox | wc -l | tr -d '\\n' > ~/inbox-count.txt"), done()],
          failing=[sh("printf 3 > ~/inbox-count.txt"), done()])


def add_os_text_edit_tasks(s: Suite) -> None:
    """The os domain's text edits: a log without its DEBUG lines, a new one-line file."""
    s.add("os", "clean-log",
          "Remove every DEBUG line from ~/logs/app.log and keep all the other lines.",
          config=[shell("mkdir -p ~/logs && printf 'INFO started\\nDEBUG cache warm\\nERROR disk full\\n"
                        "DEBUG retry 1\\nINFO stopped\\n' > ~/logs/app.log")],
          evaluator={"func": "check_list", "result": {"type": "vm_file", "path": "/home/user/logs/app.log",
                                                      "dest": "app.log"},
                     "expected": rule({"expect": ["^INFO started", "^ERROR disk full", "^INFO stopped"],
                                       "unexpect": ["DEBUG"]})},
          apps=["os"],
          passing=[sh("sed -i '/DEBUG/d' ~/logs/app.log"), done()],
          failing=[sh("sed -i '/ERROR/d' ~/logs/app.log"), done()])
    s.add("os", "write-motd",
          "Create the file ~/motd.txt whose only line is: Welcome to the lab",
          config=[],
          evaluator={"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/motd.txt",
                                                             "dest": "motd.txt"},
                     "expected": s.cache_file("write-motd", "motd_gold.txt", b"Welcome to the lab\n")},
          apps=["os"],
          passing=[act("append_file", path="~/motd.txt", text="Welcome to the lab\n"), done()],
          failing=[act("append_file", path="~/motd.txt", text="Welcome to the lab!\n"), done()])


def add_os_infeasible_task(s: Suite) -> None:
    """The os domain's task that cannot be done: passing means saying so."""
    s.add("os", "impossible-refresh-rate",
          "Set this computer's display to 8K resolution at 240 Hz in the system display settings.",
          config=[step("sleep", seconds=0.1)],
          evaluator={"func": "infeasible"},
          apps=["os"],
          passing=[act("finish", status="FAIL", message="there is no 8K 240 Hz mode on this display")],
          failing=[done("changed it")])


def add_mousepad_tasks(s: Suite) -> None:
    """Mousepad, a light text editor: replace a file's content, append a line."""
    notes = b"draft\n"
    s.add("mousepad", "mousepad-replace-text",
          "The file ~/Documents/notes.txt is open in Mousepad. Replace its whole content with the two lines "
          "'Buy milk' and 'Call Ada', and save it.",
          config=[step("download", files=[s.download("mousepad-replace-text", "notes.txt",
                                                     "/home/user/Documents/notes.txt", notes)]),
                  step("launch", command=["mousepad", "/home/user/Documents/notes.txt"]),
                  step("activate_window", window_name="notes.txt")],
          evaluator={"func": "compare_text_file", "result": {"type": "vm_file",
                                                             "path": "/home/user/Documents/notes.txt",
                                                             "dest": "notes.txt"},
                     "expected": s.cloud_file("mousepad-replace-text", "notes_gold.txt", b"Buy milk\nCall Ada\n")},
          apps=["mousepad"],
          passing=[act("hotkey", keys=["ctrl", "a"]), act("type", text="Buy milk\nCall Ada\n"),
                   act("hotkey", keys=["ctrl", "s"]), done("saved")],
          failing=[act("hotkey", keys=["ctrl", "a"]), act("type", text="Buy milk\nCall Ada\n"), done("typed")])
    s.add("mousepad", "mousepad-append-line",
          "~/todo.txt is open in a text editor. Add the line '3. ship it' at its end and save the file.",
          config=[shell("printf '1. write it\\n2. test it\\n' > ~/todo.txt"),
                  step("open", path="/home/user/todo.txt"),
                  step("activate_window", window_name="todo.txt")],
          evaluator={"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/todo.txt",
                                                             "dest": "todo.txt"},
                     "expected": s.cache_file("mousepad-append-line", "todo_gold.txt",
                                              b"1. write it\n2. test it\n3. ship it\n")},
          apps=["mousepad"],
          passing=[act("hotkey", keys=["ctrl", "end"]), act("type", text="3. ship it\n"),
                   act("hotkey", keys=["ctrl", "s"]), done("saved")],
          failing=[act("hotkey", keys=["ctrl", "end"]), act("type", text="3. ship it\n"), done("added")])


def add_chrome_tasks(s: Suite) -> None:
    """Chrome (Chromium): read a tab's title."""
    s.add("chrome", "chrome-tab-title",
          "Two local pages are open in the browser. Write the title of the page in the second tab, followed by a "
          "newline, into ~/answer.txt.",
          config=[shell("mkdir -p ~/site && printf '<title>Alpha</title><h1>first</h1>' > ~/site/a.html && "
                        "printf '<title>Bravo</title><h1>second</h1>' > ~/site/b.html"),
                  step("chrome_open_tabs", urls_to_open=["file:///home/user/site/a.html",
                                                         "file:///home/user/site/b.html"])],
          evaluator={"func": "exact_match", "result": command_line("cat ~/answer.txt"),
                     "expected": rule({"expected": "Bravo\n"})},
          apps=["chrome"],
          passing=[sh("echo Bravo > ~/answer.txt"), done()],
          failing=[sh("echo Alpha > ~/answer.txt"), done()])


def add_office_pick_tasks(s: Suite) -> None:
    """Office documents (files only: made, moved and compared here): pick the right version."""
    draft = docx_bytes(["Quarterly report", "DRAFT: numbers to be checked", "Revenue 10"])
    final = docx_bytes(["Quarterly report", "FINAL", "Revenue 12"])
    s.add("office", "docx-pick-final",
          "Two versions of the quarterly report are in ~/Downloads. Copy the one whose second paragraph says "
          "FINAL to ~/Documents/report.docx.",
          config=[step("download", files=[s.download("docx-pick-final", "report_a.docx",
                                                     "/home/user/Downloads/report_a.docx", draft),
                                          s.download("docx-pick-final", "report_b.docx",
                                                     "/home/user/Downloads/report_b.docx", final)])],
          evaluator={"func": "compare_docx_files", "result": {"type": "vm_file",
                                                              "path": "/home/user/Documents/report.docx",
                                                              "dest": "report.docx"},
                     "expected": s.cloud_file("docx-pick-final", "report_gold.docx", final)},
          apps=["os"],
          passing=[sh("mkdir -p ~/Documents && cp ~/Downloads/report_b.docx ~/Documents/report.docx"), done()],
          failing=[sh("mkdir -p ~/Documents && cp ~/Downloads/report_a.docx ~/Documents/report.docx"), done()])
    old_deck = pptx_bytes([("Roadmap", "Q1: plan"), ("Team", "Ada, Grace")])
    new_deck = pptx_bytes([("Roadmap", "Q1: plan\nQ2: build"), ("Team", "Ada, Grace, Alan")])
    s.add("office", "pptx-pick-latest",
          "Two decks are in ~/Downloads. Copy the one whose roadmap slide also lists Q2 to ~/Desktop/roadmap.pptx.",
          config=[step("download", files=[s.download("pptx-pick-latest", "deck_1.pptx",
                                                     "/home/user/Downloads/deck_1.pptx", new_deck),
                                          s.download("pptx-pick-latest", "deck_2.pptx",
                                                     "/home/user/Downloads/deck_2.pptx", old_deck)])],
          evaluator={"func": "compare_pptx_files", "result": {"type": "vm_file",
                                                              "path": "/home/user/Desktop/roadmap.pptx",
                                                              "dest": "roadmap.pptx"},
                     "expected": s.cloud_file("pptx-pick-latest", "roadmap_gold.pptx", new_deck)},
          apps=["os"],
          passing=[sh("mkdir -p ~/Desktop && cp ~/Downloads/deck_1.pptx ~/Desktop/roadmap.pptx"), done()],
          failing=[sh("mkdir -p ~/Desktop && cp ~/Downloads/deck_2.pptx ~/Desktop/roadmap.pptx"), done()])
    march = xlsx_bytes([["item", "amount"], ["rent", 900], ["food", 310]])
    april = xlsx_bytes([["item", "amount"], ["rent", 900], ["food", 285]])
    s.add("office", "xlsx-pick-april",
          "~/Downloads holds the budgets of March (budget_1.xlsx or budget_2.xlsx) and April; April's food line is "
          "285. Copy April's workbook to ~/Documents/april.xlsx.",
          config=[step("download", files=[s.download("xlsx-pick-april", "budget_1.xlsx",
                                                     "/home/user/Downloads/budget_1.xlsx", march),
                                          s.download("xlsx-pick-april", "budget_2.xlsx",
                                                     "/home/user/Downloads/budget_2.xlsx", april)])],
          evaluator={"func": "compare_table", "result": {"type": "vm_file", "path": "/home/user/Documents/april.xlsx",
                                                         "dest": "april.xlsx"},
                     "expected": s.cloud_file("xlsx-pick-april", "april_gold.xlsx", april),
                     "options": {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}},
          apps=["os"],
          passing=[sh("mkdir -p ~/Documents && cp ~/Downloads/budget_2.xlsx ~/Documents/april.xlsx"), done()],
          failing=[sh("mkdir -p ~/Documents && cp ~/Downloads/budget_1.xlsx ~/Documents/april.xlsx"), done()])


def add_office_csv_task(s: Suite) -> None:
    """Office documents: a text list turned into a CSV file."""
    s.add("office", "csv-from-notes",
          "~/Documents/scores.txt lists names and scores as 'name: score'. Write them, in the same order, as the "
          "CSV file ~/Documents/scores.csv with the header line name,score.",
          config=[shell("mkdir -p ~/Documents && printf 'ada: 91\\ngrace: 88\\nalan: 79\\n' > "
                        "~/Documents/scores.txt")],
          evaluator={"func": "compare_csv",
                     "result": {"type": "vm_file", "multi": True, "gives": [1],
                                "path": ["/home/user/Documents/scores.txt", "/home/user/Documents/scores.csv"],
                                "dest": ["scores.txt", "scores.csv"]},
                     "expected": s.cloud_file("csv-from-notes", "scores_gold.csv",
                                              b"name,score\nada,91\ngrace,88\nalan,79\n")},
          apps=["os"],
          passing=[sh("{ echo name,score; sed 's/: /,/' ~/Documents/scores.txt; } > ~/Documents/scores.csv"), done()],
          failing=[done("nothing to do")])


def write(s: Suite, root: Path = ROOT) -> None:
    for sub in ("examples", "cache", "mock"):
        shutil.rmtree(root / sub, ignore_errors=True)
    index: dict[str, list[str]] = {}
    for domain, task, passing, failing in s.tasks:
        path = root / "examples" / domain / f"{task['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(task, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        index.setdefault(domain, []).append(task["id"])
        for kind, script in (("pass", passing), ("fail", failing)):
            out = root / "mock" / kind / f"{task['id']}.yaml"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(yaml.safe_dump(script, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (root / "test_all.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    cache = root / "cache"
    for task_id, link, guest, data in s.downloads:
        target = download_path(cache, task_id, link, guest)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for task_id, dest, data in s.cloud:
        target = cloud_path(cache, task_id, dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def main() -> None:
    suite = Suite()
    build(suite)
    write(suite)
    print(f"wrote {len(suite.tasks)} task(s), {len(suite.downloads) + len(suite.cloud)} cached file(s) to {ROOT}")


if __name__ == "__main__":
    main()
