"""How the viewer draws a `best-of-n` report (`conway judge`): per task its rollouts side by side, the judge's pick
marked, and the figures on top (pass@1, pass@k, best-of-N, the judge's agreement, what a success cost).

Each rollout's picture is its last screen (what the checker looked at), served as the case's j-th image
(`img/case-<index>-<j>.jpg`, `conway.view.site`); under it its outcome, steps and the command that opens its
session. The judge's reason is the card's text.
"""

from __future__ import annotations

from typing import Any

from conway.view.overlay import frame
from conway.view.page import esc
from conway.view.report_tasks import _line


def card_body(c: dict[str, Any]) -> tuple[str, str]:
    figs, lines = [], []
    index = int(c.get("index", 0))
    for j, side in enumerate(s for s in c.get("rollouts") or [] if s.get("image")):
        image = side["image"]
        size = tuple(image.get("size") or (1280, 800))
        mark = ' style="outline:3px solid #2a8a4a;outline-offset:2px"' if side.get("picked") else ""
        figs.append(f'<div class="{"picked" if side.get("picked") else "rollout"}"{mark}>'
                    + frame(f"img/case-{index}-{j}.jpg", "", (int(size[0]), int(size[1])), "", image["label"])
                    + "</div>")
    for side in c.get("rollouts") or []:
        mark = " ← the judge's pick" if side.get("picked") else ""
        lines.append(_line(f"sample {side.get('sample')}", esc(f"{side.get('outcome')}, {side.get('steps')} step(s)"
                                                                f"{mark}") + (f" · <code>{esc(side['view'])}</code>"
                                                                              if side.get("view") else ""),
                           "" if side.get("outcome") == "pass" else "err"))
    for n in c.get("narratives") or []:  # what the judge read: each rollout's facts, step by step
        facts = n.get("facts") if isinstance(n.get("facts"), list) else []
        body = "".join(f"<li>{esc(f)}</li>" for f in facts) or f"<li>{esc(n.get('problem') or 'no step to narrate')}</li>"
        lines.append(_line(f"facts {n.get('sample')}", f"<details><summary>{len(facts)} fact(s)</summary><ol>{body}"
                                                        "</ol></details>"))
    pick = c.get("pick")
    lines.insert(0, _line("task", esc(f"{c.get('task')} · picked {'none' if pick is None else f'sample {pick}'}")))
    if c.get("reason"):
        lines.append(_line("why", esc(c["reason"])))
    if c.get("error"):
        lines.append(_line("error", esc(c["error"]), "err"))
    cost = c.get("judge_cost") or {}
    lines.append(_line("judge cost", esc(f"{cost.get('requests', 0)} request(s), {cost.get('tokens_in', 0):,} tokens in, "
                                         f"{cost.get('tokens_out', 0):,} out, model {cost.get('model_s', 0)} s")))
    return f'<div class="pair">{"".join(figs)}</div>', "".join(lines)


def summary_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    from conway.evals.best_of_n import _cost_text, _rate_text

    o = (data.get("figures") or {}).get("overall") or {}
    rows = [(what, esc(_rate_text(o[key]))) for key, what in (
        ("pass1", "pass@1 (mean)"), ("passk", "pass@k (any passed)"), ("best_of_n", "best-of-N (the pick passed)"),
        ("agreement", "judge agrees with the checker")) if key in o]
    if o.get("cost"):
        rows.append(("rollouts cost", esc(_cost_text(o["cost"]))))
    if o.get("judge_cost"):
        rows.append(("judge cost", esc(_cost_text(o["judge_cost"]))))
    for key, what in (("pass1", "per passing rollout"), ("best_of_n", "per best-of-N success")):
        each = (o.get("cost_per_success") or {}).get(key, False)
        if each is not False:
            rows.append((f"cost {what}", esc(_cost_text(each) if each else "nothing passed")))
    eff = o.get("efficiency")
    if eff:
        rows.append(("efficiency", esc(f"steps {eff.get('steps_vs_reference')}x the reference over {eff['tasks']} "
                                       f"task(s); WES+ {eff.get('wes_plus')}, WES- {eff.get('wes_minus')}")))
    return rows
