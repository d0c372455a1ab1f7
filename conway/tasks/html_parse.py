"""OSWorld's `active_tab_html_parse` getter: texts read out of the active tab's page, by class, XPath, label or
input, and words looked for in its URL, into the {key: value} a `check_direct_json_object` rule compares.

The page is the open tab whose URL equals the active URL (`devtools.active_url`: the address bar's text after
the task's `goto_prefix`), both unquoted and without a trailing `/`; none: `{}`, as OSWorld. The reading runs in
that tab through DevTools (`Runtime.evaluate` of READ below), doing what OSWorld does through Playwright:
`text_content().strip()` of every element of a class, the direct text nodes of an element
(`class_multiObject_child`), an `h3` child's text (`..._only_child`), the `span` of `li.catAllProducts` items
(`class_multiObject_li`, inner text), the first element an XPath finds, an input's value, the smallest element
holding a label's text (Playwright's `text=` selector, case-insensitive). A missing element gives "".
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from conway.tasks import devtools
from conway.tasks.env import TaskEnv

READ = r"""
((config) => {
  const all = (sel) => { try { return Array.from(document.querySelectorAll(sel)); } catch (e) { return []; } };
  const texts = (sel) => all(sel).map(e => (e.textContent || '').trim());
  const direct = (sel) => { const first = all(sel)[0]; return first ? Array.from(first.childNodes)
      .filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent.trim()).filter(Boolean) : []; };
  const onlyChild = (sel) => all(sel).filter(e => e.querySelector('h3'))
      .map(e => (e.querySelector('h3').textContent || '').trim());
  const lis = (sel) => all(sel + ' li.catAllProducts').filter(e => e.querySelector('span'))
      .map(e => (e.querySelector('span').innerText || '').trim());
  const xpath = (path) => { try { return document.evaluate(path, document, null,
      XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue; } catch (e) { return null; } };
  const label = (text) => { const want = text.toLowerCase().trim(); let found = null;
    for (const e of document.body ? document.body.querySelectorAll('*') : []) {
      if (['SCRIPT', 'STYLE'].includes(e.tagName)) continue;
      const t = (e.textContent || '').replace(/\s+/g, ' ').toLowerCase();
      if (t.includes(want) && !Array.from(e.children).some(c => (c.textContent || '').replace(/\s+/g, ' ')
          .toLowerCase().includes(want))) { found = e; break; } }
    return found ? (found.textContent || '').trim() : ''; };
  const out = {};
  const ranked = (obj, read) => { for (const [cls, ranks] of Object.entries(obj || {})) { const got = read('.' + cls);
    for (const [rank, key] of Object.entries(ranks)) { const i = parseInt(rank); out[key] = got.length > i ? got[i] : ''; } } };
  const lower = (s) => String(s).toLowerCase();
  const choices = (obj, read) => { for (const [cls, wanted] of Object.entries(obj || {})) { const got = read('.' + cls);
    for (const w of wanted) if (got.some(t => lower(w) === lower(t))) out[lower(w)] = true;
    for (const t of got) if (wanted.every(w => !lower(w).includes(lower(t)))) { out.is_other_exist = true; break; }
    if (!('is_other_exist' in out)) out.is_other_exist = false; } };
  const url = lower(location.href);
  const cat = config.category;
  if (cat === 'class') {
    ranked(config.class_multiObject, texts); ranked(config.class_multiObject_child, direct);
    ranked(config.class_multiObject_only_child, onlyChild);
    for (const [cls, wanted] of Object.entries(config.class_multiObject_search_exist || {})) {
      const got = texts('.' + cls);
      for (const w of wanted) if (w !== 'is_other_exist') out[w] = got.includes(w);
      if (wanted.includes('is_other_exist')) {
        if (got.some(t => !wanted.includes(t))) out.is_other_exist = true;
        if (!('is_other_exist' in out)) out.is_other_exist = false; } }
    for (const [cls, key] of Object.entries(config.class_singleObject || {})) { const got = texts('.' + cls);
      out[key] = got.length ? got[0] : ''; }
  } else if (cat === 'label') {
    for (const [text, key] of Object.entries(config.labelObject || {})) out[key] = label(text);
  } else if (cat === 'xpath') {
    for (const [path, key] of Object.entries(config.xpathObject || {})) { const n = xpath(path);
      out[key] = n ? (n.textContent || '').trim() : ''; }
  } else if (cat === 'input') {
    for (const [path, key] of Object.entries(config.inputObject || {})) { const n = xpath(path);
      out[key] = n && n.value ? String(n.value).trim() : ''; }
  } else if (cat === 'class&url') {
    choices(config.class_multiObject, texts); choices(config.class_multiObject_li, lis);
    for (const k of config.url_include_expected || []) if (!(lower(k) in out)) out[lower(k)] = url.includes(lower(k));
    for (const [k, v] of Object.entries(config.url_include_expected_multichoice || {}))
      if (!(lower(v) in out)) out[lower(v)] = url.includes(lower(k));
  }
  return out;
})
"""


def _normal(url: str) -> str:
    return unquote(url).rstrip("/")


def active_tab_html_parse(env: TaskEnv, config: dict[str, Any]) -> dict[str, Any] | None:
    url = devtools.active_url(env, config)
    if url is None:
        return None
    page = next((p for p in devtools.page_targets(env) if _normal(str(p.get("url", ""))) == _normal(url)), None)
    if page is None:
        return {}
    value = devtools.ask(env, {"op": "eval", "id": page["id"], "expression": f"{READ}({json.dumps(config)})"})
    return dict(value) if isinstance(value, dict) else {}


GETTERS = {"active_tab_html_parse": active_tab_html_parse}
