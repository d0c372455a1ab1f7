"""A stand-alone script (standard library only) run inside the task's sandbox for the `gotoRecreationPage_and_get_html_content`
getter: `python3 -c SOURCE REQUEST_JSON PROBE_SOURCE` prints one JSON answer.

It walks www.recreation.gov in the task's browser as OSWorld's getter does through Playwright: the home page (three
spellings of its address tried), "Diamond" typed into the hero search box, the search button, the first
highlighted result (which opens a tab), its "next available" button (five selectors tried; none clicked is no
failure), then the text of the `order`-th element of the asked class. The DevTools helpers (the WebSocket, the
page calls) are `devtools_probe.py`'s, whose source comes as the second argument and is run here as a module.
Fixed waits are OSWorld's (10 s after the search, 3 s on the results, 30 s after the result's tab opens, 2 + 2 s
on it; the request's `wait_scale` multiplies them: 1, OSWorld's, unless a test on a local copy of the site asks
less); element waits poll until the element is visible, within OSWorld's timeouts. The addresses tried come in
the request (`homes`).
"""

import json
import os
import re
import sys
import time

TIMEOUT_S = 60.0
NEXT_AVAILABLE = ("button.next-available", "button[class*='next-available']", "button[class*='next']",
                  ".next-available", "[data-testid*='next']")
FAILED = "__EVALUATION_FAILED__"
VISIBLE = ("(() => {{ const e = document.querySelector({sel}); if (!e) return null; const r = e.getBoundingClientRect();"
           " const s = getComputedStyle(e); return (r.width > 0 && r.height > 0 && s.visibility !== 'hidden') ?"
           " [r.left + r.width / 2, r.top + r.height / 2] : null; }})()")


def wait_visible(probe, ws, selector, timeout):
    """The centre of the element once it is visible (scrolled into view first), else OSError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            probe["evaluate"](ws, f"document.querySelector({json.dumps(selector)})?.scrollIntoView({{block: 'center'}})")
            centre = probe["evaluate"](ws, VISIBLE.format(sel=json.dumps(selector)))
            if centre:
                return centre
        except OSError:  # the page is navigating
            pass
        time.sleep(0.25)
    raise OSError(f"{selector} was not visible within {timeout:g} s")


def click(probe, ws, selector, timeout):
    """A real mouse click at the element's centre, as Playwright's `click` does."""
    x, y = wait_visible(probe, ws, selector, timeout)
    for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
        ws.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)


def fill(probe, ws, selector, text, timeout):
    """Playwright's `fill`: the field focused, its text selected and replaced by typing it as one insertion."""
    wait_visible(probe, ws, selector, timeout)
    probe["evaluate"](ws, f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.focus(); e.select(); }})()")
    ws.call("Input.insertText", text=text)


def go_home(probe, ws, homes):
    for url in homes:
        answer = ws.call("Page.navigate", url=url)
        if answer.get("errorText"):
            continue
        probe["wait_loaded"](ws, TIMEOUT_S)
        return url
    raise OSError("could not load any address of recreation.gov")


def wait_url(probe, ws, pattern, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if re.search(pattern, probe["evaluate"](ws, "location.href") or ""):
                return
        except OSError:
            pass
        time.sleep(0.25)
    raise OSError(f"the page did not reach {pattern} within {timeout:g} s")


def open_result(probe, port, ws):
    """The search's first highlighted result clicked; the tab it opens, once there."""
    before = {t["id"] for t in probe["pages"](port)}
    click(probe, ws, ".search-result-highlight--success", 25)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new = [t for t in probe["pages"](port) if t["id"] not in before]
        if new:
            return new[0]
        time.sleep(0.5)
    raise OSError("the search result opened no tab")


def read_class(probe, ws, config):
    name = config["class"]
    if "order" in config:
        script = (f"(() => {{ const all = document.querySelectorAll({json.dumps('.' + name)}); "
                  f"const e = all[{int(config['order'])}]; return e ? e.textContent : null; }})()")
    else:
        script = f"(() => {{ const e = document.querySelector({json.dumps('.' + name)}); return e ? e.textContent : null; }})()"
    text = probe["evaluate"](ws, script)
    return {name: FAILED if text is None else text.strip()}


def walk(probe, port, request):
    config, homes, scale = request["config"], request["homes"], float(request.get("wait_scale", 1.0))
    opened = []
    try:
        target = probe["http"](port, "/json/new?about:blank", method="PUT")
        opened.append(target["id"])
        ws = probe["Socket"](target["webSocketDebuggerUrl"], TIMEOUT_S)
        go_home(probe, ws, homes)
        fill(probe, ws, "input#hero-search-input", "Diamond", TIMEOUT_S)
        click(probe, ws, "button.nav-search-button", TIMEOUT_S)
        time.sleep(10 * scale)
        wait_url(probe, ws, r"recreation\.gov/search", 20)
        time.sleep(3 * scale)
        result = open_result(probe, port, ws)
        opened.append(result["id"])
        time.sleep(30 * scale)
        page = probe["Socket"](result["webSocketDebuggerUrl"], TIMEOUT_S)
        probe["wait_loaded"](page, 20)
        time.sleep(4 * scale)
        for selector in NEXT_AVAILABLE:
            try:
                click(probe, page, selector, 30)
                break
            except OSError:
                continue
        if config.get("selector") != "class":
            return {"expected": {}}
        try:
            return {"expected": read_class(probe, page, config)}
        except OSError:
            return {"expected": {"extraction_error": FAILED}}
    finally:
        for target_id in opened:
            try:
                probe["http"](port, f"/json/close/{target_id}", as_json=False)
            except OSError:
                pass


def load_probe(probe_source):
    """The DevTools probe's helpers (conway/tasks/devtools_probe.py, sent by the host as the second argument) as a
    module imported from a file of its own: its main runs only as __main__."""
    import importlib.util
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "devtools_probe.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(probe_source)
        spec = importlib.util.spec_from_file_location("devtools_probe", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return vars(module)


def main(request, probe_source):
    return walk(load_probe(probe_source), int(request.get("port", 9222)), request)


if __name__ == "__main__":
    try:
        print(json.dumps({"ok": main(json.loads(sys.argv[1]), sys.argv[2])}))
    except Exception as exc:  # one line back to the getter, whatever went wrong
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
