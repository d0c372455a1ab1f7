"""The conway-report/1 format: provenance, refusal of existing / in-home paths, rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conway.cli.main import main
from conway.config import ConwayConfig, PolicyConfig
from conway.errors import UserError
from conway.evals.report import (
    FORMAT,
    INLINE_CASES_MAX,
    Report,
    check_new_output,
    load_report,
    redact,
    safe_endpoint,
)
from conway.evals.report_render import render_report
from conway.evals.text import table
from conway.store.home import resolve_home


def _report(tmp_path: Path, name: str = "r.json", cases: int = 2, **kw) -> Path:
    cfg = ConwayConfig(policy=PolicyConfig(kind="generic", endpoint="http://user:pw@127.0.0.1:9/v1"))
    rep = Report("vision-check", tmp_path / name, argv=["vision-check", "--seed", "3"], config=cfg, seed=3,
                 parameters={"samples": cases}, expected_cases=cases)
    rep.set_model("m-1")
    for i in range(cases):
        rep.add_case({"index": i, "hit": i % 2 == 0, "target": {"colour": "red", "shape": "square",
                                                                "box": [1, 2, 3, 4]},
                      "predicted": [2.0, 3.0], "distance_px": 0.0, "latency_s": 0.01})
    return rep.finish(status="fail", exit_code=2, summary={"cases": cases, "hits": 1, "misses": 1, "errors": 0,
                                                           "hit_rate": 0.5, "hit_rate_ci95": [0.1, 0.9]}, **kw)


def test_report_carries_provenance_and_no_secrets(tmp_path):
    path = _report(tmp_path)
    data = json.loads(path.read_text())
    assert data["format"] == FORMAT == "conway-report/1"
    assert data["command"]["argv"] == ["conway", "vision-check", "--seed", "3"]
    assert data["command"]["line"] == "conway vision-check --seed 3"
    assert data["conway"]["version"]
    assert "git_revision" in data["conway"]  # a revision when run from a checkout, else None
    assert data["config"]["policy"]["endpoint"] == "http://127.0.0.1:9/v1"  # userinfo stripped
    assert data["endpoint"] == "http://127.0.0.1:9/v1"
    assert "pw" not in path.read_text()
    assert len(data["config_digest"]) == 64
    assert data["model_id"] == "m-1" and data["seed"] == 3
    assert data["machine"]["cpus"] >= 1
    assert data["started_at"] <= data["ended_at"]
    assert [c["index"] for c in data["cases"]] == [0, 1]
    assert data["exit_code"] == 2 and data["status"] == "fail"


def test_git_revision_recorded_in_a_checkout(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    data = json.loads(_report(tmp_path).read_text())
    if (repo / ".git").exists():
        assert len(data["conway"]["git_revision"]) == 40


def test_long_suites_keep_cases_in_jsonl_beside(tmp_path):
    n = INLINE_CASES_MAX + 5
    path = _report(tmp_path, cases=n)
    data = json.loads(path.read_text())
    assert "cases" not in data
    side = tmp_path / "r.cases.jsonl"
    assert data["cases_file"]["path"] == side.name and data["cases_file"]["count"] == n
    assert len(side.read_text().splitlines()) == n
    _, cases = load_report(path)
    assert len(cases) == n
    assert "more case(s)" in render_report(path)


def test_redact_and_safe_endpoint():
    assert redact({"policy": {"api_key": "sk-abcdefghijklmnopqrstuvwx", "api_key_env": "KEY", "max_tokens": 5}}) == \
        {"policy": {"api_key": "<redacted>", "api_key_env": "KEY", "max_tokens": 5}}
    assert safe_endpoint("https://a:b@host:8080/v1") == "https://host:8080/v1"
    assert safe_endpoint("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize("where", ["exists", "in_home", "no_folder", "empty"])
def test_check_new_output_refuses(tmp_path, conway_home, where):
    home = resolve_home(None)
    home.ensure_dirs()
    if where == "exists":
        p = tmp_path / "x.json"
        p.write_text("{}")
    elif where == "in_home":
        p = conway_home / "reports" / "x.json"
        p.parent.mkdir()
    elif where == "no_folder":
        p = tmp_path / "nope" / "x.json"
    else:
        p = Path("")
    with pytest.raises(UserError) as err:
        check_new_output(str(p) if where != "empty" else "", home)
    msg = str(err.value)
    assert {"exists": "already exists", "in_home": "inside the Conway home", "no_folder": "does not exist",
            "empty": "empty"}[where] in msg


def test_report_never_overwrites_at_write_time(tmp_path):
    cfg = ConwayConfig()
    rep = Report("preflight", tmp_path / "late.json", argv=[], config=cfg)
    (tmp_path / "late.json").write_text("someone else's")
    with pytest.raises(UserError, match="appeared while the check ran"):
        rep.finish(status="ready", exit_code=0, summary={})
    assert (tmp_path / "late.json").read_text() == "someone else's"


def test_table_aligns():
    out = table(["a", "bb"], [[1, "x"], ["long", None]]).splitlines()
    assert out[0].startswith("a     bb") and set(out[1]) <= {"-", " "} and out[3].startswith("long")


def test_cli_report_renders_a_table(tmp_path, capsys):
    path = _report(tmp_path)
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "vision-check report (conway-report/1)" in out
    assert "conway vision-check --seed 3" in out
    assert "hits 1/2" in out
    assert "[1,2..3,4]" in out  # the target box column


@pytest.mark.parametrize("content,msg", [
    (None, "does not exist"),
    (b"\xff\xfe", "not a Conway report"),
    (b'{"format": "other/1"}', "not a Conway report"),
    # a kind this Conway does not know: it printed "?" in every field and exited 0
    (b'{"format": "conway-report/1", "kind": "telepathy-check"}', "report of kind 'telepathy-check', which this "
     "Conway does not know (it reads vision-check, "),
    (b'{"format": "conway-report/1"}', "report of kind None, which this Conway does not know"),
])
def test_cli_report_bad_input(tmp_path, capsys, content, msg):
    p = tmp_path / "bad.json"
    if content is not None:
        p.write_bytes(content)
    assert main(["report", str(p)]) == 1
    assert msg in capsys.readouterr().err


def test_report_of_a_trajectory_names_only_commands_that_read_it(tmp_path, capsys):
    import re
    import shutil
    home = tmp_path / "recorded"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "export" / "home", home)
    traj = tmp_path / "traj.jsonl"
    assert main(["--home", str(home), "export", "--output", str(traj)]) == 0
    session = json.loads(traj.read_text().splitlines()[0])["session"]
    capsys.readouterr()
    assert main(["--home", str(home), "report", str(traj)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "conway-traj/1 trajectory" in err
    suggested = [c for c in re.findall(r"`(conway [^`]+)`", err) if c != "conway export"]  # where it came from
    assert suggested == ["conway replay --trajectory FILE", f"conway view --session {session}"]
    # what it suggests works: the session's pages, from the home it was exported from
    assert main(["--home", str(home), "view", "--session", session, "--output", str(tmp_path / "site")]) == 0
