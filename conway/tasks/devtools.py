"""Getters that ask the running browser over the DevTools protocol, as OSWorld's chrome.py does through
Playwright's `connect_over_cdp`: the open tabs, the active tab's URL, a page's title, URL and HTML, a PDF print.

The browser runs inside the task's sandbox, on its private loopback, so each question is asked from there:
`env.run` starts `python3 -c` with `devtools_probe.py`'s source (standard library only) and reads its one JSON
answer. OSWorld's Chrome listens on port 9222 (`chromium_port`); so must the desktop's Chromium
(`--remote-debugging-port=9222`).

Where OSWorld differs and why, in docs/checks.md: the active tab's URL is read from DevTools (the page target
the endpoint lists first, the most recently active) and written as the address bar shows it (no `http(s)://`,
no leading `www.`) before the task's `goto_prefix`, where OSWorld reads the address bar through the
accessibility tree; `open_tabs_info` lists the tabs in the endpoint's order.
"""

from __future__ import annotations

import base64
import json
import re
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from conway.tasks.env import TaskEnv

PORT = 9222
PROBE = Path(__file__).with_name("devtools_probe.py")
PROBE_TIMEOUT_S = 90.0


class DevToolsError(RuntimeError):
    """The browser did not answer (not running, no DevTools port): one line."""


def ask(env: TaskEnv, request: dict[str, Any]) -> Any:
    """The probe's answer to one request, run in the task's sandbox."""
    return run_script(env, PROBE, request, PROBE_TIMEOUT_S)


def run_script(env: TaskEnv, script: Path, request: dict[str, Any], timeout_s: float) -> Any:
    """The answer of a stand-alone DevTools script (the probe, or a walk that uses the probe's helpers: it gets
    the probe's source as its second argument) to one request, run in the task's sandbox."""
    argv = ["python3", "-c", script.read_text(encoding="utf-8"), json.dumps({"port": PORT, **request})]
    if script != PROBE:
        argv.append(PROBE.read_text(encoding="utf-8"))
    done = env.run(argv, timeout_s=timeout_s)
    if done.timed_out:
        raise DevToolsError(f"the browser did not answer within {timeout_s:g} s")
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise DevToolsError(f"no answer from the DevTools probe: {done.stderr.strip()[-200:]!r}") from None
    if "error" in answer:
        raise DevToolsError(f"the browser's DevTools endpoint (port {PORT}): {answer['error']}")
    return answer["ok"]


def page_targets(env: TaskEnv) -> list[dict[str, Any]]:
    return list(ask(env, {"op": "list"}))


def open_page(env: TaskEnv, url: str, *, pdf: bool = False) -> dict[str, Any]:
    """A new tab at `url`, loaded: {title, url, content} (and `pdf`, base64), the tab closed afterwards."""
    return dict(ask(env, {"op": "open", "url": url, "pdf": pdf}))


def close_tabs(env: TaskEnv, ids: list[str]) -> None:
    if ids:
        ask(env, {"op": "close", "ids": ids})


def shown_in_address_bar(url: str) -> str:
    """The URL as Chrome's address bar shows it (scheme and a leading `www.` elided)."""
    return re.sub(r"^www\.", "", re.sub(r"^https?://", "", url))


def active_url(env: TaskEnv, config: dict[str, Any]) -> str | None:
    pages = page_targets(env)
    if not pages or not pages[0].get("url"):
        return None
    return f"{config.get('goto_prefix', 'https://')}{shown_in_address_bar(pages[0]['url'])}"


def active_url_from_accessTree(env: TaskEnv, config: dict[str, Any]) -> str | None:
    """The active tab's URL after the task's `goto_prefix` (default `https://`), as OSWorld's getter gives it."""
    return active_url(env, config)


def active_tab_info(env: TaskEnv, config: dict[str, Any]) -> dict[str, Any] | None:
    """The active tab's URL opened again in a new tab: its {title, url, content} (OSWorld reloads it too)."""
    url = active_url(env, config)
    return None if url is None else open_page(env, url)


def page_info(env: TaskEnv, config: dict[str, Any]) -> dict[str, Any]:
    return open_page(env, str(config["url"]))


def open_tabs_info(env: TaskEnv, config: dict[str, Any]) -> list[dict[str, str]]:
    """Each open tab's {title, url}; an empty list when the browser does not answer, as OSWorld's getter."""
    try:
        pages = page_targets(env)
    except DevToolsError:
        return []
    return [{"title": p.get("title", ""), "url": p.get("url", "")} for p in reversed(pages)]


def active_tab_url_parse(env: TaskEnv, config: dict[str, Any]) -> dict[str, Any] | None:
    """The active URL's query values for `parse_keys` (first value, '' when absent), renamed by `replace`, split
    on commas with `split_list`."""
    url = active_url(env, config)
    if url is None:
        return None
    query = parse_qs(urlparse(url).query)
    found: dict[str, Any] = {key: query.get(key, [""])[0] for key in config["parse_keys"]}
    for old, new in (config.get("replace") or {}).items():
        found[new] = found.pop(old)
    if config.get("split_list", False):
        found = {k: v.split(",") for k, v in found.items()}
    return found


def url_dashPart(env: TaskEnv, config: dict[str, Any]) -> Any:
    """Part `partIndex` of the active URL split on "/" (before any `?` with `needDeleteId`), as a string or as
    {key: part}."""
    url = active_url(env, config)
    try:
        index = int(config["partIndex"])
    except (ValueError, TypeError):
        return None
    parts = url.split("/") if url is not None else []
    if url is None or index >= len(parts) or index < -len(parts):
        return None
    part = parts[index].split("?")[0] if config.get("needDeleteId", False) else parts[index]
    kind = config.get("returnType")
    return part if kind == "string" else {config["key"]: part} if kind == "json" else None


DISCOUNT = "50_PERCENT_ off & more"


def _path_pairs(parts: list[str]) -> dict[str, Any]:
    """The first two neighbouring path segments that both hold commas: keys, then their values."""
    for here, after in zip(parts, parts[1:]):
        if "," in here and "," in after:
            pairs: dict[str, Any] = {}
            for k, v in zip((k.strip() for k in here.split(",")), (v.strip() for v in after.split(","))):
                pairs[k] = ([x.strip() for x in v.split("|")] if v else None) if k == "Price_discount_range" \
                    else (v or None)
            return pairs
    return {}


def url_path_parse(env: TaskEnv, config: dict[str, Any]) -> dict[str, Any] | None:
    """OSWorld's Macy's product-URL reading: flags for the department and sleeve, then the `parse_keys` found in
    the path's key/value segments (the discount range reduced to whether it is 50% and no lower)."""
    url = active_url(env, config)
    if url is None:
        return None
    path = unquote(urlparse(url).path)
    pairs = _path_pairs(path.strip("/").split("/"))
    shirts = "shirts" in path or pairs.get("Product_department") in ("shirts", "Shirts", "Shirt")
    short = "short-sleeve" in path or pairs.get("Sleeve_length") in ("short-sleeve", "Short Sleeve")
    for key in ("Men_regular_size_t", "Price_discount_range"):
        pairs.setdefault(key, None)
    out: dict[str, Any] = {"mens_clothing": True if "mens-clothing" in path else None,
                           "shirts": True if shirts else None, "short_sleeve": True if short else None}
    for key in config["parse_keys"]:
        if key == "Price_discount_range" and key in pairs:
            ranges = pairs[key]
            only_50 = ranges is not None and DISCOUNT in ranges and not any(
                f"{p}_PERCENT_ off & more" in ranges for p in (30, 20))
            out[key] = DISCOUNT if only_50 else "not_" + DISCOUNT
        elif key in pairs:
            out[key] = pairs[key]
    return out


def info_from_website(env: TaskEnv, config: dict[str, Any]) -> Any:
    """Texts and attributes read from the page at `url` (OSWorld's `infos`: `inner_text`, `attribute`,
    `click_and_inner_text`, `click_and_attribute`), in a new tab; OSWorld's `backups` when any reading fails."""
    try:
        return ask(env, {"op": "infos", "url": str(config["url"]), "infos": list(config.get("infos", []))})
    except DevToolsError:
        return config.get("backups")


EMPTY_PDF = b"%PDF-1.4\n%EOF\n"
"""What OSWorld's getter writes when the page cannot be printed (a metric reading it scores 0)."""


def pdf_from_url(env: TaskEnv, config: dict[str, Any]) -> str:
    """The page at `path` printed to PDF by the browser (OSWorld: Playwright's `page.pdf`), as a file named `dest`
    in a fresh folder of its own (never the user's cache); OSWorld's stub PDF when the browser cannot print it."""
    out = Path(tempfile.mkdtemp(prefix="conway-pdf-")) / Path(str(config["dest"])).name
    try:
        out.write_bytes(base64.b64decode(open_page(env, str(config["path"]), pdf=True)["pdf"]))
    except (DevToolsError, KeyError, TypeError, ValueError):
        out.write_bytes(EMPTY_PDF)
    return str(out)


GETTERS = {f.__name__: f for f in (pdf_from_url, info_from_website, active_url_from_accessTree, active_tab_info, page_info, open_tabs_info,
                                   active_tab_url_parse, url_dashPart, url_path_parse)}
