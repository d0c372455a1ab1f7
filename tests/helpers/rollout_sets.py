"""A rollout set written as `conway rollouts` writes one (manifest, requests.jsonl, images), for training tests.

Per task, rollouts whose single request shows an 84x84 image and whose answers are clicks; `rewards` says
which rollout got which reward. The prompt is the generic policy's own text shape (system + user turn, image
last), the answers the generic family's JSON.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path


def _png(colour: tuple[int, int, int]) -> bytes:
    from PIL import Image

    img = Image.new("RGB", (84, 84), (230, 230, 230))
    for x in range(4, 38):
        for y in range(28, 56):
            img.putpixel((x, y), colour)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def click(x: int, y: int) -> str:
    return json.dumps({"thought": "", "action": {"type": "click", "x": x, "y": y}})


def write_rollout_set(out: Path, tasks: dict[str, list[tuple[str, float]]], *, temperature: float = 1.0,
                      policy: dict | None = None) -> Path:
    """`tasks`: task id → [(answer, reward), …] (one rollout each). Returns the folder."""
    out.mkdir(parents=True)
    rollouts, groups = [], {}
    for t, (task, samples) in enumerate(tasks.items()):
        image = _png((220, 30, 30) if t % 2 == 0 else (30, 30, 220))
        digest = hashlib.sha256(image).hexdigest()
        for k, (answer, reward) in enumerate(samples):
            rel = Path("rollouts.tasks") / f"{len(rollouts) + 1:02d}-{task}"
            folder = out / rel
            (folder / "images").mkdir(parents=True)
            (folder / "images" / f"{digest}.png").write_bytes(image)
            messages = [{"role": "system", "content": "You are Conway, a computer-use agent. Answer with JSON."},
                        {"role": "user", "content": [
                            {"type": "text", "text": f"Task: click the button of task {task}."},
                            {"type": "image_url", "image_url": {"url": f"images/{digest}.png"}, "sha256": digest,
                             "media_type": "image/png"}]}]
            (folder / "requests.jsonl").write_text(json.dumps({"index": 0, "messages": messages, "answer": answer,
                                                               "seed": k, "temperature": temperature}) + "\n")
            rollouts.append({"task": task, "sample": k, "seed": k, "reward": reward,
                             "outcome": "pass" if reward >= 1 else "fail", "session": f"s{len(rollouts)}",
                             "home": str(rel / "home"), "requests": {"path": str(rel / "requests.jsonl"), "count": 1}})
        rewards = [r for _, r in samples]
        groups[task] = {"rewards": rewards, "seeds": list(range(len(samples))), "signal": len(set(rewards)) > 1,
                        "mean_reward": sum(rewards) / len(rewards)}
    manifest = {"format": "conway-rollouts/1", "suite": "test", "samples": max(len(s) for s in tasks.values()),
                "seed": 0, "temperature": temperature, "policy": policy or {"kind": "generic", "model": {"path": "m"}},
                "report": "rollouts.json", "rollouts": rollouts, "tasks": groups,
                "mean_reward": sum(r["reward"] for r in rollouts) / len(rollouts),
                "signal": any(g["signal"] for g in groups.values())}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return out
