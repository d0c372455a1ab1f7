"""Random strings from a GBNF grammar (llama.cpp's format), for property tests of Conway's grammars.

Covers the part of GBNF that Conway's grammars and llama.cpp's JSON-schema converter use: rules
`name ::= …` (one or more lines), alternation `|`, grouping `( … )`, string literals with escapes,
character classes `[…]` / `[^…]` with ranges and escapes, rule references, and the repetitions
`?`, `*`, `+`, `{m}`, `{m,}`, `{m,n}`. A sample is one random walk from `root`; unbounded and long
repetitions are kept short (the boundaries are still hit now and then).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

_ESC = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]", "-": "-", "^": "^", "/": "/"}
_POOL = [chr(c) for c in range(0x20, 0x7F)] + list("\t\néü中文ßΩ🙂\x7f")
"""Characters a negated class draws from (printable ASCII, some control and non-ASCII)."""


@dataclass
class Lit:
    text: str


@dataclass
class Cls:
    ranges: list[tuple[str, str]]
    negated: bool


@dataclass
class Ref:
    name: str


@dataclass
class Seq:
    items: list


@dataclass
class Alt:
    options: list


@dataclass
class Rep:
    item: object
    lo: int
    hi: int | None


class _Parser:
    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def ws(self, newlines: bool = True) -> None:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "#":
                while self.i < len(self.s) and self.s[self.i] != "\n":
                    self.i += 1
            elif c in " \t" or (newlines and c in "\r\n"):
                self.i += 1
            else:
                break

    def char(self) -> str:
        c = self.s[self.i]
        self.i += 1
        if c != "\\":
            return c
        e = self.s[self.i]
        self.i += 1
        if e == "x":
            v = self.s[self.i:self.i + 2]
            self.i += 2
            return chr(int(v, 16))
        if e == "u":
            v = self.s[self.i:self.i + 4]
            self.i += 4
            return chr(int(v, 16))
        if e == "U":
            v = self.s[self.i:self.i + 8]
            self.i += 8
            return chr(int(v, 16))
        return _ESC.get(e, e)

    def rules(self) -> dict[str, object]:
        out: dict[str, object] = {}
        self.ws()
        while self.i < len(self.s):
            m = re.compile(r"[A-Za-z0-9_-]+").match(self.s, self.i)
            assert m, f"rule name expected at {self.s[self.i:self.i + 40]!r}"
            name = m.group(0)
            self.i = m.end()
            self.ws()
            assert self.s.startswith("::=", self.i), f"::= expected after {name}"
            self.i += 3
            out[name] = self.alt(top=True)
            self.ws()
        return out

    def at_rule_start(self) -> bool:
        return re.compile(r"[A-Za-z0-9_-]+\s*::=").match(self.s, self.i) is not None

    def alt(self, top: bool = False) -> object:
        options = [self.seq(top)]
        while True:
            self.ws(newlines=not top or True)
            if self.i < len(self.s) and self.s[self.i] == "|":
                self.i += 1
                options.append(self.seq(top))
            else:
                break
        return options[0] if len(options) == 1 else Alt(options)

    def seq(self, top: bool) -> object:
        items = []
        while True:
            self.ws(newlines=True)
            if self.i >= len(self.s) or self.s[self.i] in "|)" or (top and self.at_rule_start()):
                break
            items.append(self.postfix(self.atom()))
        return Seq(items)

    def atom(self) -> object:
        c = self.s[self.i]
        if c == '"':
            self.i += 1
            out = []
            while self.s[self.i] != '"':
                out.append(self.char())
            self.i += 1
            return Lit("".join(out))
        if c == "[":
            self.i += 1
            negated = self.s[self.i] == "^"
            if negated:
                self.i += 1
            ranges = []
            while self.s[self.i] != "]":
                a = self.char()
                if self.s[self.i] == "-" and self.s[self.i + 1] != "]":
                    self.i += 1
                    b = self.char()
                else:
                    b = a
                ranges.append((a, b))
            self.i += 1
            return Cls(ranges, negated)
        if c == "(":
            self.i += 1
            inner = self.alt()
            self.ws()
            assert self.s[self.i] == ")", f") expected at {self.s[self.i:self.i + 40]!r}"
            self.i += 1
            return inner
        if c == ".":
            self.i += 1
            return Cls([], True)
        m = re.compile(r"[A-Za-z0-9_-]+").match(self.s, self.i)
        assert m, f"unexpected {self.s[self.i:self.i + 40]!r}"
        self.i = m.end()
        return Ref(m.group(0))

    def postfix(self, item: object) -> object:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "?":
                item, self.i = Rep(item, 0, 1), self.i + 1
            elif c == "*":
                item, self.i = Rep(item, 0, None), self.i + 1
            elif c == "+":
                item, self.i = Rep(item, 1, None), self.i + 1
            elif c == "{":
                m = re.compile(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}").match(self.s, self.i)
                assert m, "bad repetition"
                lo = int(m.group(1))
                hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
                item, self.i = Rep(item, lo, hi), m.end()
            else:
                break
        return item


def parse_gbnf(text: str) -> dict[str, object]:
    return _Parser(text).rules()


def _refs(node: object) -> int:
    """Rule references inside `node` (a rough size of what it can expand to)."""
    if isinstance(node, Ref):
        return 1
    if isinstance(node, Seq):
        return sum(_refs(n) for n in node.items)
    if isinstance(node, Alt):
        return min(_refs(n) for n in node.options)
    if isinstance(node, Rep):
        return _refs(node.item) if node.lo else 0
    return 0


class GrammarSampler:
    """`GrammarSampler(grammar).sample(rng)` → one string the grammar accepts."""

    def __init__(self, grammar: str, max_repeat: int = 12):
        self.rules = parse_gbnf(grammar)
        assert "root" in self.rules, "a grammar needs a root rule"
        for name, node in self.rules.items():
            self._check_refs(node, name)
        self.max_repeat = max_repeat

    def _check_refs(self, node: object, where: str) -> None:
        if isinstance(node, Ref):
            assert node.name in self.rules, f"rule {where} refers to undefined rule {node.name}"
        elif isinstance(node, (Seq,)):
            for n in node.items:
                self._check_refs(n, where)
        elif isinstance(node, Alt):
            for n in node.options:
                self._check_refs(n, where)
        elif isinstance(node, Rep):
            self._check_refs(node.item, where)

    def sample(self, rng: random.Random) -> str:
        out: list[str] = []
        self._walk(self.rules["root"], rng, out, 0)
        return "".join(out)

    def _walk(self, node: object, rng: random.Random, out: list[str], depth: int) -> None:
        assert depth < 400, "grammar recursion too deep"
        if isinstance(node, Lit):
            out.append(node.text)
        elif isinstance(node, Cls):
            out.append(self._char(node, rng))
        elif isinstance(node, Ref):
            self._walk(self.rules[node.name], rng, out, depth + 1)
        elif isinstance(node, Seq):
            for item in node.items:
                self._walk(item, rng, out, depth + 1)
        elif isinstance(node, Alt):
            options = node.options
            if depth > 60:  # deep in a recursive rule (nested JSON): head for the way out
                fewest = min(_refs(o) for o in options)
                options = [o for o in options if _refs(o) == fewest]
            self._walk(rng.choice(options), rng, out, depth + 1)
        elif isinstance(node, Rep):
            hi = node.hi if node.hi is not None else node.lo + 3
            if depth > 60:
                hi = node.lo
            roll = rng.random()
            if roll < 0.15:
                n = node.lo
            elif roll < 0.25:
                n = hi  # the boundary, long strings included
            else:
                n = rng.randint(node.lo, min(hi, node.lo + self.max_repeat))
            for _ in range(n):
                self._walk(node.item, rng, out, depth + 1)
        else:
            raise TypeError(node)

    @staticmethod
    def _char(cls: Cls, rng: random.Random) -> str:
        def inside(c: str) -> bool:
            return any(a <= c <= b for a, b in cls.ranges)

        if not cls.negated:
            a, b = rng.choice(cls.ranges)
            return chr(rng.randint(ord(a), ord(b)))
        pool = [c for c in _POOL if not inside(c)]
        return rng.choice(pool)


def _regex(node: object, rules: dict[str, object], depth: int) -> str:
    if isinstance(node, Lit):
        return re.escape(node.text)
    if isinstance(node, Cls):
        body = "".join(re.escape(a) if a == b else f"{re.escape(a)}-{re.escape(b)}" for a, b in node.ranges)
        return f"[{'^' if node.negated else ''}{body}]" if body else ("[\\s\\S]" if node.negated else "(?!)")
    if isinstance(node, Ref):  # a recursive rule (nested JSON) is followed a few levels deep
        return "(?!)" if depth > 6 else f"(?:{_regex(rules[node.name], rules, depth + 1)})"
    if isinstance(node, Seq):
        return "".join(_regex(n, rules, depth) for n in node.items)
    if isinstance(node, Alt):
        return "(?:" + "|".join(_regex(n, rules, depth) for n in node.options) + ")"
    if isinstance(node, Rep):
        return f"(?:{_regex(node.item, rules, depth)}){{{node.lo},{'' if node.hi is None else node.hi}}}"
    raise TypeError(node)


def accepts(grammar: str, text: str) -> bool:
    """Whether the grammar accepts `text` whole (its rules as one regular expression; recursion cut short)."""
    rules = parse_gbnf(grammar)
    return re.fullmatch(_regex(rules["root"], rules, 0), text, re.DOTALL) is not None
