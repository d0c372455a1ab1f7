"""`conway view` without a browser: the static site, escaping, paging, thumbnails, reports, the label server.

The session is a real loop run (scripts/demos/view_session.py). Browser-driven tests
of the same pages live in test_view_browser.py.
"""

from __future__ import annotations

import http.client
import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conway.cli.main import main
from conway.evals.report import Report
from conway.experience.labels import Label
from conway.observe.vision_cases import generate_case
from conway.store.home import Home
from conway.store.journal import Journal, make_event
from conway.view.command import build_site
from conway.view.page import esc
from conway.view.server import ViewServer
from scripts.demos.view_session import CLICK_STEP, INJECTED, SIZE, UNCERTAIN_TEXT, WINDOW_TITLE, record_session


def _site(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "site"
    assert main(["view", *args, "--output", str(out)]) == 0
    return out


def _page(out: Path, sid: str, page: int = 1) -> str:
    return (out / "s" / sid / f"page-{page:04d}.html").read_text(encoding="utf-8")


def _card(html: str, step: int) -> str:
    m = re.search(rf'<article class="card[^"]*" id="step-{step}".*?</article>', html, re.S)
    assert m, f"no card for step {step}"
    return m.group(0)


# --- the static site ------------------------------------------------------------------


def test_one_card_per_step_with_the_actions_drawn_in_screenshot_pixels(session, tmp_path, capsys):
    out = _site(tmp_path, "--last")
    said = capsys.readouterr().out
    assert f"open file://{out}/s/{session}/page-0001.html" in said
    html = _page(out, session)
    assert html.count('<article class="card') == 10
    click = _card(html, CLICK_STEP)
    assert f'viewBox="0 0 {SIZE[0]} {SIZE[1]}"' in click
    assert 'class="mark act-click" data-x="320" data-y="200"' in click
    assert 'src="thumb/step-1.jpg" data-full="img/step-1.png"' in click
    assert (out / "s" / session / "thumb" / "step-1.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    assert (out / "s" / session / "img" / "step-1.png").read_bytes() == (session_home_file("step-001.png"))
    assert 'data-x="200" data-y="300" data-to_x="420" data-to_y="300"' in _card(html, 3)  # drag path
    assert "act-scroll" in _card(html, 4) and "scrolls dy=-5" in _card(html, 4)
    assert "types “notes.txt”" in _card(html, 2)
    assert "presses ctrl+s" in _card(html, 7)
    # errors, flags, timings, geometry, the finish as the model's word
    assert "model output is not a JSON action" in _card(html, 5) and 'data-outcome="error"' in _card(html, 5)
    assert '<span class="badge flag">backoff</span>' in _card(html, 6) and "backoff 5 s" in _card(html, 6)
    assert "observe — · decide" in click and "captured 640×400" in click
    assert "(the model's own report, not verified)" in _card(html, 10)
    assert 'data-outcome="wait"' in _card(html, 9)
    assert '<div class="review">' not in html  # the static site cannot write labels
    index = (out / "index.html").read_text()
    assert f'href="s/{session}/page-0001.html"' in index


def session_home_file(name: str) -> bytes:
    import os
    return (Path(os.environ["CONWAY_HOME"]) / "screenshots" / name).read_bytes()


def test_text_from_the_model_is_escaped_everywhere(session, tmp_path):
    out = _site(tmp_path, "--last")
    html = _page(out, session)
    assert "<script>window.__pwned" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;&lt;img src=x onerror=&quot;window.__pwned = 2&quot;&gt;" in html
    assert "Content-Security-Policy" in html and "script-src &#x27;nonce-" in html
    data = (out / "s" / session / "data.js").read_text()
    assert "</script>" not in data and "<script>" not in data and "\\u003cscript\\u003e" in data
    # every script element on the page is one the page put there (it has the nonce)
    nonce = re.search(r"script-src &#x27;nonce-([^&]+)&#x27;", html).group(1)
    assert len(re.findall(r"<script\b", html)) == len(re.findall(rf'<script nonce="{nonce}"', html)) == 2


def test_a_window_title_from_the_screen_is_escaped(session, tmp_path):
    card = _card(_page(_site(tmp_path, "--last"), session), 1)
    assert "Editor &lt;img src=y onerror=&quot;window.__pwned = 3&quot;&gt;" in card and WINDOW_TITLE not in card


def test_flags_rate_limits_suppression_uncertain_and_dry_runs(conway_home, tmp_path):
    click = {"action": {"type": "click", "x": 10, "y": 10}}
    busy = record_session(conway_home, [{"rate_limit": 3}, click, click, click, click,
                                        {"action": {"type": "type", "text": UNCERTAIN_TEXT}}], still=True)
    planned = record_session(conway_home, [click], dry_run=True)
    out = _site(tmp_path)
    index = (out / "index.html").read_text()
    assert index.index(planned) < index.index(busy)  # newest first
    html = _page(out, busy)
    first = _card(html, 1)
    assert '<span class="badge flag">rate-limited</span>' in first and "rate limited, retry after 3.0 s" in first
    assert 'data-outcome="suppressed"' in _card(html, 5) and "already done 3 times in a row" in _card(html, 5)
    last = _card(html, 6)
    assert 'data-outcome="uncertain"' in last and "the keyboard went away halfway through" in last
    assert "steps 1–1 (1 in a row, waited 3 s)" in html  # the rate limit's wait is counted
    dry = _card(_page(out, planned), 1)
    assert '<span class="badge flag">dry_run</span>' in dry and 'data-outcome="dry-run"' in dry
    assert "planned only" in dry


def test_rotated_screenshot_shows_a_placeholder(session, conway_home, tmp_path):
    (conway_home / "screenshots" / "step-009.png").unlink()
    out = _site(tmp_path, "--last")
    card = _card(_page(out, session), 9)
    assert "screenshot rotated away (screenshots/step-009.png)" in card and "<img" not in card
    assert 'aspect-ratio:640/400' in card  # the box keeps the screen's shape, with the action drawn on it
    assert not (out / "s" / session / "img" / "step-9.png").exists()


def test_session_summary(session, tmp_path):
    html = _page(_site(tmp_path, "--last"), session)
    summary = html.split('<section class="summary">')[1].split("</section>")[0]
    from conway.store.provenance import harness_revision
    assert "conway-mock" in summary and harness_revision()[:12] in summary  # model id; harness revision
    assert "none 2, click 1, type 1, drag 1, scroll 1, hotkey 1, right_click 1, wait 1, finish 1" in summary
    assert "steps 5–6 (2 in a row, waited 5 s)" in summary
    assert "step 10: DONE “saved notes.txt”" in summary and "not verified" in summary


def test_the_session_cost_is_the_one_status_shows_memory_summaries_included(conway_home, tmp_path):
    from conway.experience.costs import render_record
    from conway.session.app import render_status, status_report
    from conway.view.sessions import load_sessions
    j = Journal(conway_home / "journal", fsync="none")
    j.append(make_event("s-cost", 0, "session", {"event": "start", "model_id": "m"}, now=100.0))
    j.append(make_event("s-cost", 1, "observation", {"source": "synthetic", "captured_size": [64, 64]}, now=101.0))
    j.append(make_event("s-cost", 1, "decision", {"model_id": "m", "actions": [{"type": "wait"}], "latency_s": 1.5,
                                                  "usage": {"prompt_tokens": 1200, "cached_tokens": 800,
                                                            "completion_tokens": 30}}, now=102.0))
    j.append(make_event("s-cost", 1, "memory", {"event": "compacted", "outcome": "summarised", "model_id": "m",
                                                "duration_s": 4.0, "usage": {"prompt_tokens": 900,
                                                                             "completion_tokens": 110}}, now=107.0))
    j.close()
    (conway_home / "state.json").write_text(json.dumps({"session": "s-cost", "status": "stopped"}))
    status = status_report(Home(root=conway_home))["cost"]
    (sv,), _ = load_sessions(conway_home / "journal", conway_home)
    assert sv.summary()["cost"] == status["total"] == {
        "decisions": 1, "discarded": 0, "prompt_tokens": 2100, "cached_tokens": 800, "generated_tokens": 140,
        "model_s": 5.5, "summaries": 1}  # the summary's tokens and time counted, as `conway status` counts them
    line = render_record(status)
    assert "1 decision(s) and 1 memory summary, 2,100 prompt tokens, 800 of them cached, 140 generated" in line
    assert f"cost:     {line}" in render_status(status_report(Home(root=conway_home)))
    out = _site(tmp_path)
    summary = _page(out, "s-cost").split('<section class="summary">')[1].split("</section>")[0]
    assert esc(line) in summary  # the session page prints the line `conway status` prints
    assert "<td>2,100 (800) / 140</td><td>5.5</td>" in (out / "index.html").read_text()


def test_labels_are_shown(session, conway_home, tmp_path):
    assert main(["review", "--session", session, "--step", "8", "--verdict", "wrong",
                 "--action", '{"type": "right_click", "x": 580, "y": 350}', "--note", "a <b>bit</b> higher"]) == 0
    card = _card(_page(_site(tmp_path, "--last"), session), 8)
    assert '<span class="badge label">wrong (review)</span>' in card
    assert 'class="mark corrected act-right_click" data-x="580" data-y="350"' in card
    assert "note: a &lt;b&gt;bit&lt;/b&gt; higher" in card


def test_thumbnails_are_made_once_and_cached_under_the_home(session, conway_home, tmp_path):
    _site(tmp_path, "--last")
    thumbs = sorted((conway_home / "cache" / "view" / "thumbs").rglob("*.jpg"))
    assert len(thumbs) == 10
    before = {p: p.stat().st_mtime_ns for p in thumbs}
    out2 = tmp_path / "again"
    assert main(["view", "--last", "--output", str(out2)]) == 0
    assert {p: p.stat().st_mtime_ns for p in thumbs} == before
    assert sorted((conway_home / "cache" / "view" / "thumbs").rglob("*.jpg")) == thumbs


def test_an_earlier_view_is_replaced_but_other_folders_are_refused(session, tmp_path, capsys):
    out = _site(tmp_path, "--last")
    assert main(["view", "--output", str(out)]) == 0  # an earlier view: rewritten
    other = tmp_path / "mine"
    other.mkdir()
    (other / "thesis.tex").write_text("keep me")
    capsys.readouterr()
    assert main(["view", "--output", str(other)]) == 1
    assert "is not empty and is not a Conway view" in capsys.readouterr().err
    assert (other / "thesis.tex").read_text() == "keep me"


@pytest.mark.slow
def test_ten_thousand_steps_are_paged_with_bounded_pages(conway_home, tmp_path):
    j = Journal(conway_home / "journal", fsync="none")
    sid = "big-session"
    j.append(make_event(sid, 0, "session", {"event": "start", "model_id": "m"}, now=1.0))
    for i in range(1, 10_001):
        t = 1.0 + i
        j.append(make_event(sid, i, "observation", {"source": "synthetic", "captured_size": [640, 400],
                                                    "screenshot": None}, now=t))
        act = {"type": "click", "x": i % 640, "y": i % 400, "button": "left"}
        j.append(make_event(sid, i, "decision", {"raw_text": "x" * 50, "thought": f"thought number {i}",
                                                  "actions": [act], "latency_s": 0.1}, now=t))
        kind = "error" if i % 97 == 0 else "result"
        j.append(make_event(sid, i, kind, {"action": act, "ok": kind == "result", "error": None}, now=t + 0.5))
    j.close()
    out = _site(tmp_path, "--session", sid)
    pages = sorted((out / "s" / sid).glob("page-*.html"))
    assert len(pages) == 100
    assert max(p.stat().st_size for p in pages) < 400_000
    assert (out / "s" / sid / "data.js").stat().st_size < 2_000_000
    last = pages[-1].read_text()
    assert last.count('<article class="card') == 100 and 'id="step-10000"' in last
    data = json.loads((out / "s" / sid / "data.js").read_text().split("= ", 1)[1].rstrip(";\n"))
    assert len(data["steps"]) == 10_000 and data["pages"] == 100 and data["outcome"][96] == "error"


# --- bad input: one clear line, exit 1 ------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["--session", "nope"], "no session 'nope' in the journal"),
    (["--session", "x", "--last"], "give either --session ID or --last, not both"),
    (["--serve", "--output", "somewhere"], "give one or the other"),
    (["--port", "8000"], "--port goes with --serve"),
    (["--serve", "--port", "70000"], "--port must be 0"),
    (["--page-size", "0"], "--page-size must be between 1 and 5000"),
])
def test_bad_arguments_are_one_clear_line(session, capsys, args, message):
    assert main(["view", *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_an_empty_journal_is_one_clear_line(initialized_home):
    from conftest import run_cli
    r = run_cli("view")
    assert r.returncode == 1 and "nothing to view: the journal" in r.stderr and "Traceback" not in r.stderr


def test_reports_that_cannot_be_drawn(conway_home, tmp_path, capsys):
    assert main(["view", str(tmp_path / "missing.json")]) == 1
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "pre.json"
    bad.write_text(json.dumps({"format": "conway-report/1", "kind": "preflight", "cases": []}))
    assert main(["view", str(bad)]) == 1
    assert "use `conway report" in capsys.readouterr().err
    notjson = tmp_path / "x.json"
    notjson.write_text("{")
    assert main(["view", str(notjson)]) == 1
    assert "not a Conway report" in capsys.readouterr().err
    vc = tmp_path / "vc.json"
    vc.write_text(json.dumps({"format": "conway-report/1", "kind": "vision-check", "cases": []}))
    assert main(["view", str(vc), "--last"]) == 1
    assert "--session and --last are for the journal" in capsys.readouterr().err


# --- reports ----------------------------------------------------------------------------------------


def vision_report(tmp_path: Path, name: str, offsets: list[tuple[float, float]], seed: int = 5) -> Path:
    """A real vision-check report from the mock policy clicking at each target's centre + an offset."""
    script = tmp_path / f"{name}.json.script"
    steps = []
    for i, (dx, dy) in enumerate(offsets):
        cx, cy = generate_case(seed, i, SIZE).target.centre
        steps.append({"action": {"type": "click", "x": cx + dx, "y": cy + dy}})
    script.write_text(json.dumps(steps))
    out = tmp_path / f"{name}.json"
    main(["vision-check", "--mock-script", str(script), "--samples", str(len(offsets)), "--seed", str(seed),
          "--size", f"{SIZE[0]}x{SIZE[1]}", "--output", str(out), "--quiet"])
    return out


def test_vision_check_report_has_the_target_box_and_the_click(conway_home, tmp_path):
    report = vision_report(tmp_path, "vc", [(0, 0), (0, 0), (300, 300)])
    out = _site(tmp_path, str(report))
    html = (out / "index.html").read_text()
    assert (out / "page-0001.html").is_file() and html.count('<article class="card') == 3
    cases = json.loads(report.read_text())["cases"]
    card = _card(html, 0)
    box = cases[0]["target"]["box"]
    assert f'<rect class="target" x="{box[0]}" y="{box[1]}" width="{box[2] - box[0] + 1}"' in card
    assert f'class="mark click hit" data-x="{cases[0]["predicted"][0]:g}"' in card
    assert 'data-outcome="miss"' in _card(html, 2) and "class=\"mark click miss\"" in _card(html, 2)
    assert "<th>miss pattern</th>" in html and "2/3 = 66.7%" in html
    assert (out / "img" / "case-0.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    assert len(list((conway_home / "cache" / "view" / "cases").rglob("*.jpg"))) == 3


def candidate_report(tmp_path: Path) -> Path:
    """A candidate-eval report shaped as candidate_eval writes it, from two mock vision-check runs."""
    base = json.loads(vision_report(tmp_path, "base", [(200, 200), (0, 0)]).read_text())
    cand = json.loads(vision_report(tmp_path, "cand", [(0, 0), (0, 0)]).read_text())
    out = tmp_path / "eval.json"
    r = Report("candidate-eval", out, argv=["candidate-eval", "demo"], config=None, seed=5,
               parameters={"suite": "vision-check", "samples": 2, "size": list(SIZE), "profile": "standard"})
    r.set_model("base-m vs candidate-demo")
    r.finish(status="not separated", exit_code=2,
             summary={"cases": 2, "base": {"hits": 1, "hit_rate": 0.5, "hit_rate_ci95": [0.09, 0.9], "model_id": "b"},
                      "candidate": {"hits": 2, "hit_rate": 1.0, "hit_rate_ci95": [0.34, 1.0], "model_id": "c"},
                      "difference": 0.5, "difference_ci95": [-0.2, 0.9], "intervals_separated": False,
                      "paired": {"both_hit": 1, "only_base_hit": 0, "only_candidate_hit": 1}},
             cases_order=[{"index": b["index"], "image_sha256": b["image"]["sha256"], "target": b["target"],
                           "base": {k: b.get(k) for k in ("hit", "predicted", "error", "raw_output")},
                           "candidate": {k: c.get(k) for k in ("hit", "predicted", "error", "raw_output")}}
                          for b, c in zip(base["cases"], cand["cases"])])
    return out


def test_candidate_eval_report_shows_base_and_candidate_side_by_side(conway_home, tmp_path):
    out = _site(tmp_path, str(candidate_report(tmp_path)))
    html = (out / "index.html").read_text()
    first = _card(html, 0)
    assert 'data-outcome="only-candidate"' in first
    assert first.count('<figure class="shot">') == 2 and first.count('<rect class="target"') == 2
    assert "mark click miss" in first and "mark click hit" in first
    assert "<figcaption>base</figcaption>" in first and "<figcaption>candidate</figcaption>" in first
    assert 'data-outcome="both"' in _card(html, 1)
    assert "intervals overlap" in html


def test_a_report_whose_images_cannot_be_regenerated_says_why(conway_home, tmp_path):
    report = vision_report(tmp_path, "vc", [(0, 0)])
    data = json.loads(report.read_text())
    data["cases"][0]["image"]["sha256"] = "0" * 64
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(data))
    html = (_site(tmp_path, str(changed)) / "index.html").read_text()
    assert "the regenerated image differs from the recorded one" in html


# --- the label server (the browser's half is in test_view_browser.py) --------------------------


@pytest.fixture
def server(session, conway_home):
    srv = ViewServer(build_site(Home(conway_home), last=True))
    srv.start()
    yield srv
    srv.close()


def _post(srv: ViewServer, body, *, token: str | None = None, host: str | None = None, origin: str | None = None,
          ctype: str = "application/json", no_token: bool = False) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    headers = {"Content-Type": ctype, "X-Conway-Token": srv.token if token is None else token}
    if no_token:
        del headers["X-Conway-Token"]
    if host:
        headers["Host"] = host
    if origin:
        headers["Origin"] = origin
    conn.request("POST", "/api/label", body=json.dumps(body), headers=headers)
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read())


def _get(srv: ViewServer, path: str, headers: dict | None = None, *, token: bool = True):
    """GET `path` (with the token in the header, as the pages' scripts send it, unless `token=False`):
    (status, body, response)."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request("GET", path, headers={**({"X-Conway-Token": srv.token} if token else {}), **(headers or {})})
    resp = conn.getresponse()
    return resp.status, resp.read().decode(errors="replace"), resp


def test_served_pages_carry_the_token_and_review_buttons(server, session):
    # the address printed to the owner lets a browser in and sets the cookie the pages' links then ride on
    assert server.owner_url("live") == f"{server.url}live?" + urlencode({"token": server.token})
    status, html, resp = _get(server, f"/s/{session}/page-0001.html?" + urlencode({"token": server.token}), token=False)
    assert status == 200 and resp.getheader("X-Frame-Options") == "DENY"
    assert f'<meta name="conway-token" content="{server.token}">' in html and '<div class="review">' in html
    cookie = resp.getheader("Set-Cookie")
    assert cookie == f"conway-view-{server.port}={server.token}; Path=/; HttpOnly; SameSite=Strict"
    status, html, _ = _get(server, "/", {"Cookie": cookie.split(";")[0]}, token=False)
    assert status == 200 and session in html
    for path in ("/etc/passwd", "/s/../../etc/passwd", f"/s/{session}/img/step-99.png", "/nothing"):
        assert _get(server, path)[0] == 404, path
    status, body, _ = _get(server, "/", {"Host": "evil.example:80"})
    assert status == 403 and server.token not in body


def test_without_the_token_nothing_of_the_sessions_is_shown(server, session):
    """Any local process (another user's, a task run with --network) can reach 127.0.0.1: without the owner's
    token no page, no live page and no data answers, and no answer carries the token."""
    other_port = f"conway-view-{server.port + 1}={server.token}"  # a cookie of another viewer's port is not ours
    asks = [({}, False), ({"X-Conway-Token": "wrong"}, False), ({"Cookie": f"conway-view-{server.port}=wrong"}, False),
            ({"Cookie": other_port}, False), ({"X-Conway-Token": "ü"}, False)]
    for path in ("/", "/index.html", f"/s/{session}/page-0001.html", f"/s/{session}/data.js", "/live",
                 "/live?" + urlencode({"token": "wrong"}), "/api/live", "/api/screen?id=x",
                 "/api/live?" + urlencode({"token": server.token})):
        for headers, _ in asks:
            status, body, resp = _get(server, path, headers, token=False)
            assert status == 403, (path, headers)
            assert server.token not in body and session not in body and resp.getheader("Set-Cookie") is None
            assert "conway-token" not in body
    status, body, _ = _get(server, "/live", token=False)
    assert "open the address <code>conway view --serve</code> printed" in body
    status, body, _ = _get(server, "/live")
    assert status == 200 and f'<meta name="conway-token" content="{server.token}">' in body


@pytest.mark.parametrize("body, headers, status, message", [
    ({"session": "S", "step": 1, "verdict": "correct"}, {"token": "wrong"}, 403, "token"),
    ({"session": "S", "step": 1, "verdict": "correct"}, {"token": ""}, 403, "token"),
    ({"session": "S", "step": 1, "verdict": "correct"}, {"no_token": True}, 403, "token"),
    ({"session": "S", "step": 1, "verdict": "correct"}, {"origin": "http://evil.example"}, 403, "cross-origin"),
    ({"session": "S", "step": 1, "verdict": "correct"}, {"host": "evil.example"}, 403, "Host"),
    ({"session": "S", "step": 1, "verdict": "correct"}, {"ctype": "text/plain"}, 415, "JSON"),
    ({"session": "S", "step": 1, "verdict": "great"}, {}, 400, "verdict must be one of"),
    ({"session": "S", "step": 99, "verdict": "correct"}, {}, 404, "no recorded step 99"),
    ({"session": "S", "step": "1", "verdict": "correct"}, {}, 400, "step (integer)"),
    ({"session": "S", "step": 1, "verdict": "wrong", "corrected_action": {"type": "click", "x": -5, "y": 1}}, {},
     400, "the corrected action is not valid"),
    ({"session": "S", "step": 1, "verdict": "correct", "corrected_action": {"type": "click", "x": 5, "y": 1}}, {},
     400, "only goes with wrong"),
    ({"session": "S", "step": 1, "verdict": "correct", "source": "vision-check"}, {}, 400, "unknown field"),
    ({"session": "S", "step": 1, "verdict": "correct", "note": "x" * 5000}, {}, 400, "4000"),
])
def test_refused_label_posts_write_nothing(server, session, conway_home, body, headers, status, message):
    body = {**body, "session": session} if body.get("session") == "S" else body
    code, reply = _post(server, body, **headers)
    assert code == status and message in reply["error"]
    assert not (conway_home / "labels.jsonl").exists()


def test_a_served_label_is_what_conway_review_writes_and_export_carries_it(server, session, conway_home, tmp_path):
    code, reply = _post(server, {"session": session, "step": 8, "verdict": "wrong", "note": "higher",
                                 "corrected_action": {"type": "right_click", "x": 500, "y": 100}})
    assert code == 200 and reply["ok"]
    assert main(["review", "--session", session, "--step", "3", "--verdict", "wrong", "--action",
                 '{"type": "right_click", "x": 500, "y": 100}', "--note", "higher"]) == 0
    served, typed = [json.loads(line) for line in (conway_home / "labels.jsonl").read_text().splitlines()]
    assert set(served) == set(typed) and served["schema"] == typed["schema"] == "conway-label/1"
    assert {k: v for k, v in served.items() if k not in ("ts", "step")} == \
        {k: v for k, v in typed.items() if k not in ("ts", "step")}
    Label.model_validate(served)
    out = tmp_path / "traj.jsonl"
    assert main(["export", "--output", str(out)]) == 0
    rec = next(json.loads(line) for line in out.read_text().splitlines() if json.loads(line)["step"] == 8)
    assert rec["labels"] == {"success": "unknown", "source": "review", "hindsight": False, "verdict": "wrong",
                             "corrected_action": {"type": "right_click", "x": 500.0, "y": 100.0}, "note": "higher"}
    assert "wrong (review)" in _card(_get(server, f"/s/{session}/page-0001.html")[1], 8)  # the pages show it at once


def test_escaping_is_the_same_when_served(server, session):
    html = _get(server, f"/s/{session}/page-0001.html")[1]
    assert INJECTED not in html and "&lt;script&gt;window.__pwned" in html


def test_a_report_is_served_read_only(conway_home, tmp_path):
    report = vision_report(tmp_path, "vc", [(0, 0)])
    srv = ViewServer(build_site(Home(conway_home), report=str(report)))
    srv.start()
    try:
        for path, ctype in (("/", "text/html; charset=utf-8"), ("/data.js", "text/javascript; charset=utf-8"),
                            ("/img/case-0.jpg", "image/jpeg")):
            conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
            conn.request("GET", path, headers={"X-Conway-Token": srv.token})
            r = conn.getresponse()
            r.read()
            assert r.status == 200 and r.getheader("Content-Type") == ctype, path
        assert _post(srv, {"session": "vision-check", "step": 0, "verdict": "correct"})[0] == 404
    finally:
        srv.close()


def test_a_session_id_never_becomes_a_path(conway_home, tmp_path):
    j = Journal(conway_home / "journal", fsync="none")
    j.append(make_event("../../escape", 1, "observation", {"source": "synthetic", "captured_size": [64, 64],
                                                          "screenshot": "/etc/hostname"}))
    j.close()
    out = _site(tmp_path)
    pages = list(out.rglob("page-0001.html"))
    assert len(pages) == 1 and pages[0].parent.parent == out / "s" and pages[0].parent.name.startswith("s-")
    card = _card(pages[0].read_text(), 1)
    assert "screenshot outside the home, not shown (/etc/hostname)" in card
    assert not list(out.rglob("*.png")) and not (tmp_path / "escape").exists()


def test_grounding_check_report_draws_each_screenshot_with_box_and_click(conway_home, tmp_path):
    from helpers.grounding_data import write_dataset

    write_dataset(tmp_path / "screenspot")
    script = tmp_path / "clicks.json"
    script.write_text(json.dumps([{"action": {"type": "click", "x": 300, "y": 200}}] * 10))
    report = tmp_path / "g.json"
    main(["grounding-check", "--dataset", str(tmp_path / "screenspot"), "--mock-script", str(script),
          "--output", str(report), "--quiet"])
    cases = json.loads(report.read_text())["cases"]
    out = _site(tmp_path, str(report))
    html = (out / "index.html").read_text()
    assert html.count('<article class="card') == len(cases) == 10
    c = cases[0]
    card = _card(html, c["index"])
    w, h = c["image"]["size"]
    assert f'viewBox="0 0 {w} {h}"' in card and 'data-x="300" data-y="200"' in card
    assert f'<rect class="target" x="{c["target"]["box"][0]:g}"' in card
    assert (out / "img" / f"case-{c['index']}.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    assert "<th>by type</th>" in html and '<option value="icon">icon</option>' in html


def test_the_server_follows_a_growing_journal(session, conway_home):
    home = Home(conway_home)
    srv = ViewServer(build_site(home), rebuild=lambda: build_site(home), journal=home.journal_dir)
    srv.start()
    try:
        later = record_session(conway_home, [{"action": {"type": "wait"}}])  # the agent ran again
        index = _get(srv, "/")[1]
        assert later in index and session in index
        code, reply = _post(srv, {"session": later, "step": 1, "verdict": "redundant"})
        assert code == 200 and reply["label"]["session"] == later
    finally:
        srv.close()


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_the_server_stops_cleanly_on_a_signal_even_with_sigint_ignored(session, conway_home, tmp_path, sig):
    """A script that backgrounds `conway view --serve` (SIGINT ignored) can still stop it with kill -INT/-TERM."""
    import os
    import signal
    import subprocess
    import sys

    from conftest import REPO

    env = {**os.environ, "CONWAY_HOME": str(conway_home), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "view", "--serve", "--last"], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        first = proc.stdout.readline()
        assert first.startswith("serving http://127.0.0.1:"), first + proc.stderr.read()
        assert f"/?{urlencode({'token': ''})}" in first and f"/live?{urlencode({'token': ''})}" in first  # token included
        proc.send_signal(getattr(signal, sig))
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_sweep_report_shows_one_card_per_cell_with_its_interval(conway_home, tmp_path):
    from conway.evals.sweep import compare
    rows = [{"cell": "policy-a", "settings": {"policy": "a"}, "report": "policy-a.json", "status": "pass",
             "exit_code": 0, "model_id": "m", "rate": 1.0, "ci95": [0.61, 1.0], "successes": 6, "cases": 6},
            {"cell": "policy-b", "settings": {"policy": "b"}, "report": "policy-b.json", "status": "fail",
             "exit_code": 2, "model_id": "m", "rate": 0.0, "ci95": [0.0, 0.39], "successes": 0, "cases": 6}]
    summary = {"cells": 2, "finished": 2, **compare(rows)}
    out = tmp_path / "sweep.json"
    r = Report("sweep", out, argv=["sweep", "s.yaml"], config=None, parameters={})
    for i, row in enumerate(rows):
        r.add_case({"index": i, "instruction": row["cell"], **row})
    r.finish(status="done", exit_code=0, summary=summary)
    html = (_site(tmp_path, str(out)) / "index.html").read_text()
    assert 'data-outcome="best"' in _card(html, 0) and 'data-outcome="below"' in _card(html, 1)
    assert "6/6 = 100.0% (95% CI 61.0%–100.0%)" in _card(html, 0)
    assert "conway view policy-b.json" in _card(html, 1)
    assert "clearly below the best" in html and "policy-b" in html
