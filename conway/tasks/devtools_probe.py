"""A stand-alone script (standard library only) that talks to the browser's DevTools endpoint from inside the
task's sandbox, where the browser's loopback is: `python3 -c SOURCE REQUEST_JSON` prints one JSON answer.

It is run by `conway.tasks.devtools` and imports nothing of Conway (the sandbox need not see the package).
Requests: {"op": "list"} the page targets, most recently active first, as the endpoint lists them;
{"op": "close", "ids": [...]}; {"op": "open", "url": U, "pdf": bool} a new tab at U, waited for until loaded,
its title, final URL and HTML (and a PDF print, base64), then closed; {"op": "eval", "id": ID, "expression": E};
{"op": "infos", "url": U, "infos": [...]} OSWorld's `info_from_website` reading in a new tab, then closed;
{"op": "appearance"} the colour mode chrome://settings/appearance shows (`chrome_appearance_mode_ui`).
"""

import base64
import json
import os
import socket
import struct
import sys
import time
import urllib.parse
import urllib.request


def http(port, path, method="GET", as_json=True):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(request, timeout=10) as r:
        body = r.read()
    return json.loads(body or b"null") if as_json else body.decode("utf-8", "replace")  # close answers in text


class Socket:
    """A minimal WebSocket client: text frames out (masked), frames in (unfragmented or continued)."""

    def __init__(self, url, timeout):
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise OSError("the DevTools socket closed during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError(f"the DevTools socket refused: {head.splitlines()[0]!r}")
        self.next_id = 0

    def _exact(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise OSError("the DevTools socket closed")
            data += chunk
        return data

    def send(self, text):
        payload = text.encode()
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
                                if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def receive(self):
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            n = struct.unpack(">H", self._exact(2))[0] if n == 126 else struct.unpack(">Q", self._exact(8))[0] \
                if n == 127 else n
            message += self._exact(n)
            if b0 & 0x80:
                return message.decode("utf-8", "replace")

    def call(self, method, **params):
        self.next_id += 1
        self.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            answer = json.loads(self.receive())
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise OSError(f"{method}: {answer['error'].get('message')}")
                return answer.get("result", {})


def evaluate(ws, expression):
    result = ws.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
    if "exceptionDetails" in result:
        raise OSError(f"the page's script failed: {result['exceptionDetails'].get('exception', {}).get('description')}")
    return result.get("result", {}).get("value")


def pages(port):
    return [t for t in http(port, "/json/list") if t.get("type") == "page"]


PAGE = ("JSON.stringify({title: document.title, url: location.href, content: (document.doctype ? "
        "new XMLSerializer().serializeToString(document.doctype) : '') + document.documentElement.outerHTML})")


def open_page(port, url, want_pdf, timeout):
    try:
        target = http(port, "/json/new?" + url, method="PUT")
    except OSError:  # an older browser opens with GET
        target = http(port, "/json/new?" + url)
    try:
        ws = Socket(target["webSocketDebuggerUrl"], timeout)
        deadline = time.monotonic() + timeout
        # a new target starts as a complete about:blank and navigates after: wait for the URL's own document
        # (Playwright's goto waits for its load too), not for the blank one or the gap between the two
        loaded = ("document.readyState === 'complete' && !!document.documentElement && "
                  f"(location.href !== 'about:blank' || {json.dumps(url)} === 'about:blank')")
        while not evaluate(ws, loaded) and time.monotonic() < deadline:
            time.sleep(0.2)
        info = json.loads(evaluate(ws, PAGE)) if evaluate(ws, "!!document.documentElement") else \
            {"title": "Load timeout", "url": url, "content": ""}
        if time.monotonic() >= deadline:
            info["title"] = "Load timeout"
        if want_pdf:
            info["pdf"] = ws.call("Page.printToPDF").get("data")
        return info
    finally:
        http(port, f"/json/close/{target['id']}", as_json=False)


def wait_loaded(ws, timeout):
    time.sleep(0.3)  # a click's navigation starts first
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if evaluate(ws, "document.readyState") == "complete":
                return
        except OSError:  # the context is being replaced by the navigation
            pass
        time.sleep(0.2)


FIND = "(() => {{ const e = document.querySelector({sel}); if (!e) throw new Error('no element ' + {sel}); {then} }})()"


def read_infos(port, url, infos, timeout):
    """OSWorld's `info_from_website` walk in a new tab: per info, back at `url` first, then the inner text or an
    attribute of an element, or clicks along selectors before reading the last one."""
    target = http(port, "/json/new?" + url, method="PUT")
    try:
        ws = Socket(target["webSocketDebuggerUrl"], timeout)
        wait_loaded(ws, timeout)
        out = []
        for info in infos:
            if evaluate(ws, "location.href") != url:
                ws.call("Page.navigate", url=url)
                wait_loaded(ws, timeout)
            action = info.get("action", "inner_text")
            selectors = info["selector"] if action.startswith("click_and_") else [info["selector"]]
            for sel in selectors[:-1]:
                evaluate(ws, FIND.format(sel=json.dumps(sel), then="e.click();"))
                wait_loaded(ws, timeout)
            read = "return e.innerText;" if action.endswith("inner_text") else \
                f"return e.getAttribute({json.dumps(info.get('attribute'))});"
            out.append(evaluate(ws, FIND.format(sel=json.dumps(selectors[-1]), then=read)))
        return out
    finally:
        http(port, f"/json/close/{target['id']}", as_json=False)


APPEARANCE_PAGE = "chrome://settings/appearance"
APPEARANCE = """(() => {
  const modes = [];
  const word = (text) => {
    const t = String(text == null ? '' : text).toLowerCase();
    if (t.includes('light')) return 'light';
    if (t.includes('dark')) return 'dark';
    return t.includes('device') || t.includes('system') || t.includes('default') ? 'system' : null;
  };
  const ui = document.querySelector('settings-ui');
  const prefs = ui && ui.prefs;
  const pref = (path) => path.split('.').reduce((o, k) => (o && typeof o === 'object' ? o[k] : undefined), prefs);
  for (const path of ['browser.theme.color_scheme', 'browser.theme.color_scheme2']) {
    const p = pref(path);
    if (p && typeof p === 'object' && 'value' in p) {
      const v = p.value;
      const m = ({0: 'system', 1: 'light', 2: 'dark'})[String(v)] || (typeof v === 'string' ? word(v) : null);
      if (m) modes.push(m);
    }
  }
  const own = pref('extensions.theme.system_theme');
  if (own && typeof own === 'object' && 'value' in own) {
    if ([0, '0', false].includes(own.value)) modes.push('light');
    if ([1, '1', true].includes(own.value)) modes.push('dark');
  }
  const roots = [document];
  for (let i = 0; i < roots.length; i++) {
    for (const el of roots[i].querySelectorAll('*')) if (el.shadowRoot) roots.push(el.shadowRoot);
  }
  for (const root of roots) {
    for (const el of root.querySelectorAll('[selected],[checked],[aria-checked="true"],option:checked')) {
      const m = word((el.innerText || el.textContent || '').trim());
      if (m) modes.push(m);
    }
  }
  return ['light', 'dark', 'system'].find((m) => modes.includes(m)) || null;
})()"""


def appearance(port, timeout):
    """The colour mode the settings page shows (as OSWorld's getter reads it: the page's own prefs, then the
    selected controls; light before dark before system), read in a new tab 2.5 s after it loaded, then closed;
    None when the page shows none."""
    try:
        target = http(port, "/json/new?" + APPEARANCE_PAGE, method="PUT")
    except OSError:  # an older browser opens with GET
        target = http(port, "/json/new?" + APPEARANCE_PAGE)
    try:
        ws = Socket(target["webSocketDebuggerUrl"], timeout)
        wait_loaded(ws, timeout)
        time.sleep(2.5)  # OSWorld's wait_for_timeout(2500): the page's prefs arrive after the load
        return evaluate(ws, APPEARANCE)
    finally:
        http(port, f"/json/close/{target['id']}", as_json=False)


def main(request):
    port, timeout = int(request.get("port", 9222)), float(request.get("timeout", 60))
    op = request["op"]
    if op == "list":
        return pages(port)
    if op == "close":
        return [http(port, f"/json/close/{i}", as_json=False) for i in request["ids"]]
    if op == "open":
        return open_page(port, request["url"], bool(request.get("pdf")), timeout)
    if op == "appearance":
        return appearance(port, timeout)
    if op == "infos":
        return read_infos(port, request["url"], request["infos"], timeout)
    if op == "eval":
        target = next(t for t in pages(port) if t["id"] == request["id"])
        return evaluate(Socket(target["webSocketDebuggerUrl"], timeout), request["expression"])
    raise ValueError(f"unknown op {op!r}")


if __name__ == "__main__":
    try:
        print(json.dumps({"ok": main(json.loads(sys.argv[1]))}))
    except Exception as exc:  # one line back to the getter, whatever went wrong
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
