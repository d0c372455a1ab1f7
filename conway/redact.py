"""Credentials: finding them in any data, redacting them from what Conway writes or prints.

A secret is recognised by where it sits or by its shape, in every string at
every depth (dict values, list items, inside longer strings):

* a text under a key whose *name* looks like a credential (``api_key``,
  ``password``, ``token`` …; ``*_env`` names a variable and ``*_tokens`` counts,
  so both pass). A credential is text or a long whole number (a PIN, a key written
  unquoted in YAML): a ratio such as ``chars_per_token: 3.5``, a short count or a flag
  is never one, whatever its key's name says;
* a list item after a flag that names one (``["--api-key", "…"]``), or the
  value of ``--api-key=…``;
* a URL's password (``http://user:…@host``) or a credential query parameter
  (``?api_key=…``, ``&token=…``);
* a known key shape anywhere in a string: ``sk-…`` (OpenAI, Anthropic),
  ``hf_…``, ``ghp_…``/``gho_…``/``github_pat_…``, ``xoxb-…``/``xoxp-…``,
  ``AIza…`` (Google), ``AKIA…``/``ASIA…`` (AWS), ``glpat-…``, ``Bearer …``.

`redact` replaces only the secret part (a URL keeps its host). Environment
variables are judged by name (`looks_like_secret_env`): the shell tool drops
them from the environment of the model's commands, and exports scan for their
values (`known_secret_values`).
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Iterable, Mapping

__all__ = ["REDACTED", "find_secrets", "redact", "redact_text", "secret_spans", "looks_like_secret_env",
           "tool_environment", "known_secret_values", "redact_known"]

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(r"(api[_-]?key|apikey|secret|password|passwd|authorization|bearer|access[_-]?token|"
                          r"auth[_-]?token|^token$|_token$)", re.I)
_ALLOWED_NAME = re.compile(r"(_env|_tokens|tokens_.*)$", re.I)  # e.g. api_key_env, max_tokens
_SECRET_FLAG = re.compile(r"^-{1,2}[A-Za-z0-9_-]*?(api[-_]?key|apikey|secret|password|passwd|token|"
                          r"authorization)$", re.I)
_PATTERNS = [
    # known key shapes: the whole match is the secret
    re.compile(r"(?<![A-Za-z0-9])(?:sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|"
               r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|"
               r"AIza[0-9A-Za-z_-]{30,}|(?:AKIA|ASIA)[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{20,})"),
    # the group is the secret
    re.compile(r"\bBearer\s+([A-Za-z0-9._~+/=-]{8,})"),
    # scheme://user:PASSWORD@host; a scheme starts a run of scheme characters (one try per run: linear)
    re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:?#]*:([^/@\s?#]+)@"),
    re.compile(r"[?&;](?:api[_-]?key|apikey|key|token|access[_-]?token|auth|secret|password|sig|signature)"
               r"=([^&#\s]+)", re.I),
    # --…api-key=VALUE; a flag starts a run of flag characters (one try per run: linear)
    re.compile(r"(?<![A-Za-z0-9_-])-{1,2}[A-Za-z0-9_-]*?(?:api[-_]?key|apikey|secret|password|passwd|token)"
               r"=(\S+)", re.I),
]


def secret_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every secret-looking part of `text`, merged and sorted; linear in `len(text)`."""
    spans = []
    for pat in _PATTERNS:
        for m in pat.finditer(text):
            spans.append(m.span(1) if pat.groups else m.span())
    spans.sort()
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def redact_text(text: str) -> str:
    """`text` with every secret-looking part replaced by <redacted>."""
    spans = secret_spans(text)
    if not spans:
        return text
    out, pos = [], 0
    for a, b in spans:
        out.append(text[pos:a])
        out.append(REDACTED)
        pos = b
    out.append(text[pos:])
    return "".join(out)


PIN_DIGITS = 6
"""A whole number this long under a credential's name is taken for one (a PIN, a numeric key written unquoted in
YAML); a shorter one, a ratio or a flag is a setting (`chars_per_token: 3`, `max_tokens: 512`)."""


def _may_be_credential(value: Any) -> bool:
    """Whether a value could be a credential at all, by what it is: a non-empty text (or other object), or a whole
    number of PIN_DIGITS digits or more; never a boolean, a ratio or a short count, whatever its key's name says."""
    if value in (None, "") or isinstance(value, (bool, float)):
        return False
    if isinstance(value, int):
        return len(str(abs(value))) >= PIN_DIGITS
    return True


def _secret_name(key: Any) -> bool:
    k = str(key)
    return bool(_SECRET_NAME.search(k)) and not _ALLOWED_NAME.search(k)


def find_secrets(data: Any, prefix: str = "") -> list[str]:
    """Dotted paths (``runtime.extra_args[1]``) of every value that looks like a credential."""
    found: list[str] = []
    if isinstance(data, Mapping):
        for k, v in data.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, Mapping) and _ALLOWED_NAME.search(str(k)):  # headers_env: its values name variables
                found += [f"{key}.{n}" for n, x in v.items() if isinstance(x, str) and secret_spans(x)]
            elif isinstance(v, (Mapping, list, tuple)):
                found += find_secrets(v, key)
            elif _may_be_credential(v) and _secret_name(k):
                found.append(key)
            elif isinstance(v, str) and secret_spans(v):
                found.append(key)
    elif isinstance(data, (list, tuple)):
        after_flag = False
        for i, v in enumerate(data):
            key = f"{prefix}[{i}]"
            if isinstance(v, (Mapping, list, tuple)):
                found += find_secrets(v, key)
            elif isinstance(v, str) and ((after_flag and v and not v.startswith("-")) or secret_spans(v)):
                found.append(key)
            after_flag = isinstance(v, str) and bool(_SECRET_FLAG.match(v))
    elif isinstance(data, str) and secret_spans(data):
        found.append(prefix or "(value)")
    return found


def redact(data: Any) -> Any:
    """A copy of `data` with every secret replaced (only the secret part of a longer string)."""
    if isinstance(data, Mapping):
        out = {}
        for k, v in data.items():
            if isinstance(v, Mapping) and _ALLOWED_NAME.search(str(k)):  # headers_env: names, not values
                out[k] = {n: redact_text(x) if isinstance(x, str) else x for n, x in v.items()}
            elif not isinstance(v, (Mapping, list, tuple)) and _may_be_credential(v) and _secret_name(k):
                out[k] = REDACTED
            else:
                out[k] = redact(v)
        return out
    if isinstance(data, (list, tuple)):
        items, after_flag = [], False
        for v in data:
            if after_flag and isinstance(v, str) and v and not v.startswith("-"):
                items.append(REDACTED)
            else:
                items.append(redact(v))
            after_flag = isinstance(v, str) and bool(_SECRET_FLAG.match(v))
        return items
    if isinstance(data, str):
        return redact_text(data)
    return data


# --- environment variables -----------------------------------------------------------------

_ENV_SUBSTRINGS = ("PASSWORD", "PASSWD", "SECRET", "APIKEY", "API_KEY", "API-KEY", "PRIVATE_KEY", "ACCESS_KEY",
                   "CREDENTIAL", "SESSION_KEY")


def looks_like_secret_env(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential (HF_TOKEN, OPENAI_API_KEY …)."""
    upper = name.upper()
    if any(s in upper for s in _ENV_SUBSTRINGS):
        return True
    return any(part.endswith("TOKEN") for part in re.split(r"[^A-Z0-9]+", upper))


def tool_environment(environ: Mapping[str, str], *, drop: Iterable[str | None] = (),
                     drop_patterns: Iterable[str] = (), keep: Iterable[str] = ()) -> tuple[dict[str, str], list[str]]:
    """(the environment for the model's commands, the names removed).

    Removed: the variables named in `drop` (the API key variable), names that
    look like credentials, and names matching `drop_patterns` (fnmatch); a
    name in `keep` stays unless `drop` names it.
    """
    named = {n for n in drop if n}
    keep_set = set(keep)
    patterns = list(drop_patterns)
    env, removed = {}, []
    for name, value in environ.items():
        if name in named or (name not in keep_set and (
                looks_like_secret_env(name) or any(fnmatch.fnmatchcase(name, p) for p in patterns))):
            removed.append(name)
        else:
            env[name] = value
    return env, sorted(removed)


MIN_SECRET_CHARS = 8
"""Shorter values are not scanned for (a 3-character 'secret' would redact ordinary words)."""


def known_secret_values(environ: Mapping[str, str], names: Iterable[str | None] = ()) -> list[str]:
    """Values of the named variables and of every secret-looking one, longest first."""
    wanted = {n for n in names if n}
    values = {v for k, v in environ.items() if (k in wanted or looks_like_secret_env(k))
              and len(v.strip()) >= MIN_SECRET_CHARS}
    return sorted(values, key=len, reverse=True)


def redact_known(data: Any, values: list[str]) -> tuple[Any, int]:
    """(a copy of `data` with every occurrence of the known secret values and key shapes redacted, how many)."""
    count = 0

    def text(s: str) -> str:
        nonlocal count
        for v in values:
            if v in s:
                count += s.count(v)
                s = s.replace(v, REDACTED)
        spans = secret_spans(s)
        if spans:
            count += len(spans)
            s = redact_text(s)
        return s

    def walk(d: Any) -> Any:
        if isinstance(d, Mapping):
            return {k: walk(v) for k, v in d.items()}
        if isinstance(d, (list, tuple)):
            return [walk(v) for v in d]
        if isinstance(d, str):
            return text(d)
        return d

    return walk(data), count
