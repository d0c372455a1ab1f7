"""`export --format hf` speaks the trainers people already use: a `messages` + `images` conversational layout
(TRL's SFTTrainer, trl 1.16.0) and a `sharegpt/` folder (LLaMA-Factory's multimodal ShareGPT format with its
dataset_info.json entry). The messages are the policy's own prompt, the image as the policy sent it, and the
target turn in the family's style; TRL trains 2 steps on them with the tiny model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("datasets")

REPO = Path(__file__).resolve().parents[2]

from helpers.tiny_models import practice_report  # noqa: E402

from conway.cli.main import main  # noqa: E402


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("conv")
    report = practice_report(work / "home", work / "practice.json", samples=6, seed=5)
    out = work / "ds"
    assert main(["--home", str(work / "home"), "export", "--from-report", str(report), "--format", "hf",
                 "--style", "generic", "--output", str(out)]) == 0
    return out


def test_messages_are_the_policy_prompt_image_and_target_turn(exported):

    from conway.config import load_config
    from datasets import load_from_disk
    from training.data import DataSettings, build_examples, load_rows
    ds = load_from_disk(str(exported))
    assert {"messages", "images", "image", "target", "record"} <= set(ds.column_names)
    examples, _ = build_examples(load_rows(exported), DataSettings(), load_config(None, []))
    by_target = {}
    for row in ds:
        msgs = row["messages"]
        assert [m["role"] for m in msgs] == ["system", "user", "assistant"]
        user = msgs[1]["content"]
        assert [p["type"] for p in user].count("image") == 1 and user[-1]["type"] == "image"  # image last
        assert msgs[2]["content"] == [{"type": "text", "text": row["target"]}]
        assert json.loads(row["target"])["action"]["type"] == "click"
        assert len(row["images"]) == 1 and row["images"][0].size == (84, 84)
        by_target[msgs[1]["content"][0]["text"]] = msgs
    # the same system and user text training/data.py trains on (one implementation: conway/experience/conversation.py)
    ex = examples[0]
    system_text = ex.messages[0]["content"]
    assert any(m[0]["content"][0]["text"] == system_text for m in by_target.values())
    assert "You are Conway" in system_text


def test_sharegpt_folder_for_llama_factory(exported):
    folder = exported / "sharegpt"
    info = json.loads((folder / "dataset_info.json").read_text())
    entry = info["conway"]
    assert entry["formatting"] == "sharegpt" and entry["columns"] == {"messages": "messages", "images": "images"}
    assert entry["tags"]["user_tag"] == "user" and entry["tags"]["system_tag"] == "system"
    data = json.loads((folder / entry["file_name"]).read_text())
    assert len(data) == 6
    for row in data:
        assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]
        assert sum(m["content"].count("<image>") for m in row["messages"]) == len(row["images"]) == 1
        assert (folder / row["images"][0]).stat().st_size > 100
    from datasets import load_from_disk
    assert len(load_from_disk(str(exported))) == 6  # the extra folder does not disturb the dataset


def _processor(path: Path):
    """transformers' Qwen2VLProcessor wants a video processor (torchvision, not installed here); a processor
    declaring only the image processor and the tokenizer is all TRL's vision collator needs."""
    from transformers import AutoImageProcessor, AutoTokenizer, ProcessorMixin

    class ImageTextProcessor(ProcessorMixin):
        attributes = ["image_processor", "tokenizer"]
        image_processor_class = "AutoImageProcessor"
        tokenizer_class = "AutoTokenizer"

        def __init__(self, image_processor, tokenizer, chat_template=None):
            super().__init__(image_processor, tokenizer, chat_template=chat_template)
            self.image_token = "<|image_pad|>"
            self.merge = int(getattr(image_processor, "merge_size", 2))

        def __call__(self, images=None, text=None, **kwargs):
            kwargs = {k: v for k, v in kwargs.items() if k in ("padding", "padding_side", "truncation",
                                                               "max_length", "return_tensors",
                                                               "add_special_tokens", "pad_to_multiple_of")}
            out = {}
            texts = [text] if isinstance(text, str) else list(text)
            if images is not None:
                flat = [im for group in images for im in (group if isinstance(group, list) else [group])]
                img = self.image_processor(images=flat, return_tensors="pt")
                out.update(pixel_values=img["pixel_values"], image_grid_thw=img["image_grid_thw"])
                counts = iter(int(t.prod()) // self.merge ** 2 for t in img["image_grid_thw"])
                texts = [_expand(t, self.image_token, counts) for t in texts]
            enc = self.tokenizer(texts, **kwargs)
            out.update(enc)
            import torch
            out["mm_token_type_ids"] = (torch.as_tensor(enc["input_ids"]) ==
                                        self.tokenizer.convert_tokens_to_ids(self.image_token)).long()
            from transformers import BatchFeature
            return BatchFeature(out)

    tok = AutoTokenizer.from_pretrained(str(path))
    return ImageTextProcessor(AutoImageProcessor.from_pretrained(str(path)), tok, chat_template=tok.chat_template)


def _expand(text: str, token: str, counts) -> str:
    parts = text.split(token)
    return "".join(p + (token * next(counts) if i < len(parts) - 1 else "") for i, p in enumerate(parts))


def test_trl_sft_trainer_trains_two_steps_on_the_export(exported, tiny_base, tmp_path):
    trl = pytest.importorskip("trl")
    import torch
    from transformers import AutoModelForImageTextToText

    from datasets import load_from_disk

    torch.manual_seed(0)
    ds = load_from_disk(str(exported)).select_columns(["messages", "images"])
    model = AutoModelForImageTextToText.from_pretrained(str(tiny_base))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    args = trl.SFTConfig(output_dir=str(tmp_path / "trl"), max_steps=2, per_device_train_batch_size=2,
                         learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to=[],
                         use_cpu=True, max_length=None, dataloader_num_workers=0)
    trainer = trl.SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=_processor(tiny_base))
    result = trainer.train()
    assert result.global_step == 2
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(0 < x < 100 for x in losses)
    moved = sum(1 for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n]))
    assert moved > 0


def test_hf_rows_keep_the_recorded_geometry(tmp_path):
    """A step sent at a token-capped 392x224 (not the rule's default 644x392): the image in `images`, the size
    the prompt states and the target all use 392x224, in the conversation and in the Conway columns."""
    import shutil

    from datasets import load_from_disk
    home = tmp_path / "home"
    shutil.copytree(REPO / "tests" / "data" / "export" / "home", home)
    for journal in (home / "journal").glob("*.jsonl"):
        journal.write_text(journal.read_text().replace('"sent_size":[644,392]', '"sent_size":[392,224]'))
    out = tmp_path / "ds"
    assert main(["--home", str(home), "export", "--format", "hf", "--style", "generic", "--output", str(out)]) == 0
    ds = load_from_disk(str(out))
    assert len(ds) > 0
    for row in ds:
        assert (row["sent_width"], row["sent_height"]) == (392, 224)
        assert row["images"][0].size == (392, 224)
        text = "".join(p["text"] or "" for m in row["messages"][:2] for p in m["content"])
        assert "392x224" in text and "644x392" not in text
        assert row["messages"][2]["content"][0]["text"] == row["target"]


def test_steps_without_a_screen_are_left_out_of_every_layout(tmp_path, capsys):
    """Two steps decided without a screenshot: every row left is a whole conversation by TRL's own check,
    the dataset and sharegpt/ hold the same steps, and the export says how many it left out."""
    import shutil

    from trl.data_utils import is_conversational

    from datasets import load_from_disk
    home = tmp_path / "home"
    shutil.copytree(REPO / "tests" / "data" / "export" / "home", home)
    for journal in (home / "journal").glob("*.jsonl"):
        text = journal.read_text()
        for n in (2, 3):
            text = text.replace(f'"screenshot":"screenshots/step-00{n}.png"', '"screenshot":null')
        journal.write_text(text)
    out = tmp_path / "ds"
    assert main(["--home", str(home), "export", "--format", "hf", "--output", str(out)]) == 0
    assert "left out 2 step(s) of the hf data that make no whole conversation" in capsys.readouterr().out
    ds = load_from_disk(str(out))
    assert sorted(ds["step"]) == [1, 4, 5, 6, 7]
    for row in ds:
        assert is_conversational(row) and len(row["images"]) == 1
    data = json.loads((out / "sharegpt" / "data.json").read_text())
    assert len(data) == len(ds)
    for row in data:
        assert is_conversational(row) and len(row["images"]) == 1
