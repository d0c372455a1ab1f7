"""Export writers: trajectory JSONL, a Hugging Face `datasets` folder, and ShareGPT conversations.

`conway.experience.export` turns the journal into step records; these write them out (never
over an existing file), rendering target turns through `conway.policies.target_turns`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.experience.steps import record_image
from conway.policies.families import get_family
from conway.policies.target_turns import render_target
from conway.store.state import STDOUT


def _refuse_existing(output: Path) -> None:
    if output == STDOUT:
        return
    if output.exists():
        raise UserError(f"{output} already exists; choose a new file (export never overwrites)")
    if not output.parent.exists():
        raise UserError(f"folder {output.parent} does not exist")


def _make_private(folder: Path) -> None:
    """Files 0600 and folders 0700, like reports: an export holds screenshots and screen text."""
    folder.chmod(0o700)
    for path in folder.rglob("*"):
        path.chmod(0o700 if path.is_dir() else 0o600)


def write_jsonl(records: list[dict[str, Any]], output: Path, style: str | None = None) -> list[str]:
    """Write every record, with a `target` when a style is given and the step has that family's form;
    returns the steps whose target turn was left out (their records are written without one)."""
    _refuse_existing(output)
    unrendered = []
    family = get_family(style) if style else None
    to_stdout = output == STDOUT
    tmp = output.with_name(output.name + ".partial")
    with contextlib.nullcontext(sys.stdout) if to_stdout else \
            os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as fh:
        if not to_stdout:
            os.fchmod(fh.fileno(), 0o600)  # private like reports: screen text, paths, typed text
        for rec in records:
            if family:
                try:
                    t = render_target(rec, family)
                except ValueError as exc:
                    unrendered.append(f"{rec['session']} step {rec['step']}: {exc}")
                    fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
                    continue
                rec = {**rec, "target": {"style": style, "text": t.text, "convention": t.convention,
                                         "sent_size": list(t.sent_size), "source": t.source}}
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
    if not to_stdout:
        tmp.replace(output)
    return unrendered


def conversation_row(rec: dict[str, Any], png: bytes, style: str, config: Any) -> tuple[list[dict[str, Any]], bytes]:
    """(messages, image as sent): the step as policy family `style` sees it, with its target turn last.

    messages: system / user (the policy's text parts and one `{"type": "image"}` part where the policy puts
    the image) / assistant (the target in the family's format). Image, the size the prompt states and the
    target come from one geometry, the one the target is rendered in (`step_geometry`: the recorded sent
    size and convention when they apply, else the family's own rule), with the loop's encoding.
    ValueError when the step cannot be rendered.
    """
    from conway.experience.conversation import policy_messages, step_context, typed_parts

    family = get_family(style)
    target = render_target(rec, family)
    ctx = step_context(rec, png, config)
    messages, image = policy_messages(ctx, style, convention=target.convention,
                                      encoding=config.policy.resolved_encoding, sent_size=target.sent_size)
    turns = [{"role": m["role"], "content": typed_parts(m["content"])} for m in messages]
    turns.append({"role": "assistant", "content": [{"type": "text", "text": target.text}]})
    return turns, image.data


def write_sharegpt(folder: Path, conversations: list[tuple[list[dict[str, Any]], bytes]]) -> None:
    """LLaMA-Factory's multimodal ShareGPT layout: data.json (`<image>` where the image goes), images/, and
    the dataset_info.json entry `conway` (formatting sharegpt, role/content tags, system turns kept)."""
    images = folder / "images"
    images.mkdir(parents=True)
    data = []
    for i, (turns, image) in enumerate(conversations):
        ext = "png" if image[:4] == b"\x89PNG" else "jpg"
        name = f"images/{i:06d}.{ext}"
        (folder / name).write_bytes(image)
        msgs = [{"role": t["role"], "content": "".join("<image>" if p["type"] == "image" else p["text"]
                                                        for p in t["content"])} for t in turns]
        data.append({"messages": msgs, "images": [name]})
    (folder / "data.json").write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    info = {"conway": {"file_name": "data.json", "formatting": "sharegpt",
                       "columns": {"messages": "messages", "images": "images"},
                       "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                                "assistant_tag": "assistant", "system_tag": "system"}}}
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


_HF_COLUMNS = ("session", "step", "image", "image_sha256", "instruction", "target", "style", "convention",
               "sent_width", "sent_height", "captured_width", "captured_height", "success", "label_source",
               "hindsight", "record", "messages", "images")


def _hf_row(rec: dict[str, Any], data: bytes, t: Any, style: str, turns: list[dict[str, Any]],
            sent: bytes) -> dict[str, Any]:
    """One step's row: its screenshot, target (`t`, rendered in `style`), label, record and conversation."""
    labels = rec.get("labels") or {}
    return {"session": rec["session"], "step": rec["step"], "image": {"bytes": data, "path": None},
            "image_sha256": hashlib.sha256(data).hexdigest(),
            "instruction": rec.get("instruction") or (rec.get("prompt") or {}).get("text") or "",
            "target": t.text, "style": style, "convention": t.convention,
            "sent_width": t.sent_size[0], "sent_height": t.sent_size[1],
            "captured_width": t.captured_size[0], "captured_height": t.captured_size[1],
            "success": labels.get("success", "unknown"), "label_source": labels.get("source"),
            "hindsight": bool(labels.get("hindsight", False)),
            "record": json.dumps(rec, ensure_ascii=False, sort_keys=True),
            "messages": turns, "images": [{"bytes": sent, "path": None}]}


def _hf_features() -> Any:
    from datasets import Features, Image, List, Value

    return Features({"session": Value("string"), "step": Value("int64"), "image": Image(),
                     "image_sha256": Value("string"), "instruction": Value("string"),
                     "target": Value("string"), "style": Value("string"), "convention": Value("string"),
                     "sent_width": Value("int64"), "sent_height": Value("int64"),
                     "captured_width": Value("int64"), "captured_height": Value("int64"),
                     "success": Value("string"), "label_source": Value("string"),
                     "hindsight": Value("bool"), "record": Value("string"),
                     "messages": List({"role": Value("string"),
                                       "content": List({"type": Value("string"), "text": Value("string")})}),
                     "images": List(Image())})


def _save_hf(rows: dict[str, list[Any]], output: Path, conversations: list[tuple[list[dict[str, Any]], bytes]]
             ) -> None:
    """The dataset (and its sharegpt/ copy) written beside `output`, then moved into place whole."""
    import datasets

    ds = datasets.Dataset.from_dict(rows, features=_hf_features())
    tmp = output.with_name(output.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    shown = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # the CLI says what it wrote in one line; `datasets`' bars would leak into it
    try:
        ds.save_to_disk(str(tmp))
    finally:
        if shown:
            datasets.enable_progress_bars()
    if conversations:
        write_sharegpt(tmp / "sharegpt", conversations)
    _make_private(tmp)
    tmp.replace(output)


def write_hf(records: list[dict[str, Any]], output: Path, home_root: Path | None,
             style: str = "generic") -> tuple[list[str], list[str]]:
    """Write a `datasets` folder: image (Image feature), prompt, target text and the record as JSON; the same
    steps as conversations (`messages` + `images`, TRL's conversational vision layout); and a `sharegpt/`
    subfolder for LLaMA-Factory. Every row is a whole conversation in both layouts: a step decided without a
    screenshot, or whose prompt cannot be rebuilt (no captured size), is left out of all of them.

    Steps whose screenshot is gone (`image_missing`) are image training data without an image: left out.
    Returns (steps with no rendering in `style`, steps left out for having no conversation).
    """
    records = [r for r in records if not (r.get("observation") or {}).get("image_missing")]
    try:
        from datasets import Dataset, Features, Image, List, Value  # noqa: F401 - the train extra, checked first
    except ImportError:
        raise UserError("--format hf needs the train extra (pip install -e '.[train]')") from None
    _refuse_existing(output)
    rows: dict[str, list[Any]] = {k: [] for k in _HF_COLUMNS}
    from conway.config import load_config
    config = load_config(None, [])
    conversations = []
    unrendered: list[str] = []
    no_conversation: list[str] = []
    family = get_family(style)
    for rec in records:
        where = f"{rec['session']} step {rec['step']}"
        try:
            t = render_target(rec, family)
        except ValueError as exc:
            unrendered.append(f"{where}: {exc}")
            continue
        data = record_image(rec, home_root)
        if data is None:
            no_conversation.append(f"{where}: no screenshot recorded (no screen, or none archived)")
            continue
        try:
            turns, sent = conversation_row(rec, data, style, config)
        except ValueError as exc:  # the target rendered above; the prompt cannot be rebuilt
            no_conversation.append(f"{where}: {exc}")
            continue
        for key, value in _hf_row(rec, data, t, style, turns, sent).items():
            rows[key].append(value)
        conversations.append((turns, sent))
    if not rows["step"]:
        why = (unrendered + no_conversation)[:1]
        raise UserError(f"nothing to write to {output}: none of {len(records)} step(s) makes a training row"
                        + (f" ({why[0]})" if why else ""))
    _save_hf(rows, output, conversations)
    return unrendered, no_conversation
