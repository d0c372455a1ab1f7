"""How the viewer draws a `tasks` report (`conway tasks run`): one card per task, the suite's numbers on top.

A card shows the task's last screenshot (from its kept Conway home), the
checker's score beside the model's own finish, each metric's result, the
steps, time and cost, and the `conway view` command that opens the task's
session; a task that did not run shows why.
"""

from __future__ import annotations

from typing import Any

from conway.evals.tasks_summary import NO_APPS
from conway.view.overlay import frame
from conway.view.page import esc


def _line(key: str, html: str, cls: str = "") -> str:
    # the space keeps key and value apart in the page's text (a key longer than the column: "not runnable")
    return f'<div class="line{" " + cls if cls else ""}"><span class="k">{esc(key)}</span> {html}</div>'


def _num(v: Any, fmt: str = "g") -> str:
    return format(v, fmt) if isinstance(v, (int, float)) and not isinstance(v, bool) else "—"


def card_body(c: dict[str, Any], size: tuple[int, int], url: str | None, why: str, box: str) -> tuple[str, str]:
    ran = c.get("outcome") in ("pass", "fail") or c.get("session")
    pics = frame(url, why, size, "", f"{c.get('task')} · last screen") if ran else ""
    lines = [_line("task", esc(f"{c.get('task')} · {c.get('domain') or 'no domain'} · "
                               f"apps {', '.join(c.get('related_apps') or []) or '—'}"))]
    if "sample" in c:  # a rollout (`conway rollouts`): which sample, its seed, its reward
        lines.append(_line("rollout", esc(f"sample {c.get('sample')}, seed {c.get('seed')}, temperature "
                                          f"{_num(c.get('temperature'))}, reward {_num(c.get('reward'))}")))
    if c.get("outcome") in ("pass", "fail"):
        said = c.get("declared") or {}
        said_text = f"{said.get('status')}" + (f" ({said['message']})" if said.get("message") else "") \
            if said else "nothing (no finish)"
        lines.append(_line("verified", esc(f"score {_num(c.get('score'))} by the task's checker")))
        lines.append(_line("declared", esc(f"{said_text} — the model's own word")))
    for m in c.get("metrics") or []:
        text = f"{m.get('func')}: {_num(m.get('score'))}" + (f" — {m['error']}" if m.get("error") else "")
        lines.append(_line("metric", esc(text), "err" if m.get("error") else ""))
    if c.get("timed_out"):
        lines.append(_line("timed out", esc(f"stopped after {_num(c.get('elapsed_s'), '.1f')} s (limit "
                                            f"{_num((c.get('budget') or {}).get('task_timeout_s'))} s)"), "err"))
    if c.get("error"):
        lines.append(_line("error", esc(c["error"]), "err"))
    for reason in c.get("reasons") or []:
        lines.append(_line("not runnable", esc(reason), "err"))
    if c.get("session"):
        cost = c.get("cost") or {}
        lines.append(_line("run", esc(f"{c.get('steps')} step(s) in {_num(c.get('wall_s'), '.1f')} s; "
                                      f"stopped: {c.get('stop_reason')}")))
        lines.append(_line("cost", esc(f"{cost.get('decisions', 0)} decision(s), {cost.get('prompt_tokens', 0):,} "
                                       f"prompt tokens ({cost.get('cached_tokens', 0):,} cached), "
                                       f"{cost.get('generated_tokens', 0):,} generated, model "
                                       f"{_num(cost.get('model_s'), '.1f')} s")))
        lines.append(_line("session", f"<code>{esc(c.get('view'))}</code>"))
    if c.get("video"):
        lines.append(_line("video", f'<a href="{esc(c["video"])}">{esc(c["video"])}</a> (beside the report)'))
    return pics, "".join(lines)


def _pct(v: Any) -> str:
    return f"{v:.1%}" if isinstance(v, (int, float)) else "—"


def _rate(g: dict[str, Any]) -> str:
    ci = g.get("hit_rate_ci95") or [None, None]
    return f"{g.get('hits')}/{g.get('n')} = {_pct(g.get('hit_rate'))} (95% CI {_pct(ci[0])}–{_pct(ci[1])})"


def _chance_rows(c: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The suite's chance level and the success rate's verdict against it (reports written before it had none)."""
    if not c or c.get("chance") is None:
        return []
    return [("chance", esc(f"{_pct(c['chance'])} for a policy that acts validly at random; the success interval is "
                           f"{c.get('verdict')}"))]


def summary_rows(s: dict[str, Any]) -> list[tuple[str, str]]:
    cost = s.get("cost") or {}
    d = s.get("declared") or {}
    rows = [("passed", esc(f"{_rate(s.get('success') or {})} of the scored tasks; mean score "
                           f"{_num((s.get('success') or {}).get('mean_score'))}")),
            *_chance_rows(s.get("chance")),
            ("counted apart", esc(f"errors {s.get('errors', 0)}, not runnable {s.get('not_runnable', 0)}, "
                                  f"malformed {s.get('malformed', 0)}")),
            ("declared", esc(f"DONE {d.get('DONE', 0)}, FAIL {d.get('FAIL', 0)}, nothing {d.get('nothing', 0)}; "
                             f"DONE but not verified {s.get('declared_done_but_failed', 0)}")),
            ("cost", esc(f"{cost.get('decisions', 0)} decision(s), {cost.get('prompt_tokens', 0):,} prompt tokens "
                         f"({cost.get('cached_tokens', 0):,} cached), {cost.get('generated_tokens', 0):,} generated; "
                         f"model {_num(cost.get('model_s'))} s, wall {_num(cost.get('wall_s'))} s"))]
    for key, what in (("by_domain", "by domain"), ("by_app", "by app")):
        groups = s.get(key) or {}
        if groups:
            rows.append((what, esc("; ".join(f"{n} {_rate(g)}" for n, g in groups.items()))))
    if "timed_out" in s:  # reports from before the task timeout have no such count
        rows.append(("timed out", esc(f"{s['timed_out']} task(s): stopped at --task-timeout-s, then scored as left "
                                      "(one that ignored the stop is an error)")))
    if s.get("interrupted"):
        rows.append(("interrupted", esc(s["interrupted"])))
    return rows


def rollout_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    """A rollout set's report (`conway rollouts`): per task the rewards of its K rollouts, in sample order."""
    r = data.get("rollouts") or {}
    rows = [(f"rewards · {task}", esc(" ".join(_num(x) for x in g.get("rewards") or [])
                                      + f" (mean {_num(g.get('mean_reward'))}"
                                      + ("" if g.get("signal") else "; all equal: no signal") + ")"))
            for task, g in (r.get("tasks") or {}).items()]
    if r:
        rows.insert(0, ("rollouts", esc(f"{r.get('samples')} per task, temperature {_num(r.get('temperature'))}, "
                                        f"seeds {r.get('seed')} + sample; each card below is one rollout")))
    return rows


def environment_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The environment facts and how it differs from OSWorld's VM (report level, not in the summary)."""
    env = data.get("environment") or {}
    apps = "; ".join(f"{a.get('name')} {a.get('version') or '(version unknown)'}"
                     + ("" if a.get("path") else " (not installed)") for a in env.get("apps") or [])
    rows = [("display", esc(env.get("display_size") or "—")), ("apps", esc(apps or NO_APPS))]
    diffs = data.get("differences_from_osworld") or []
    if diffs:
        rows.append(("differs from OSWorld's VM", "<ul>" + "".join(f"<li>{esc(d)}</li>" for d in diffs) + "</ul>"))
    return rows
