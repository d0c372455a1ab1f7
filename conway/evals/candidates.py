"""Candidate policies under the home: `candidates/<name>/`, listed, evaluated, promoted, rolled back.

A candidate folder holds what `training/` produced::

    candidates/<name>/
        adapter/            the LoRA adapter (peft)
        merged/             the merged Hugging Face model
        gguf/model.gguf     the merged model for llama.cpp
        gguf/mmproj.gguf    its vision projector
        train/              recipe, metrics, learning curve
        manifest.json       written LAST: its presence means "complete"

Nothing promotes by itself. `promote` rewrites the `policy` section of the
home's `config.yaml` to point at the candidate's GGUF files and records the
previous section in `promotions.jsonl`, so `promote --rollback` restores it;
both are journaled.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from conway.config import ConwayConfig, yaml_error_line
from conway.errors import ExitCode, NoValidDecision, UserError
from conway.evals.pool import PolicyRecipe, Pool, PoolSpec
from conway.evals.runner import CaseSuite, SuiteInterrupted, run_cases
from conway.store.home import Home, validate_name
from conway.store.state import atomic_write_bytes, atomic_write_json

MANIFEST = "manifest.json"
MANIFEST_SCHEMA = "conway-candidate/1"
PROMOTIONS = "promotions.jsonl"


def candidate_dir(home: Home, name: str) -> Path:
    return home.candidates / validate_name(name, "candidate name")


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    """Write the manifest last (atomically): after this the candidate counts as complete."""
    for key in ("name", "base_model", "gguf"):
        if key not in manifest:
            raise ValueError(f"a candidate manifest needs {key!r}")
    for role in ("model", "mmproj"):
        rel = manifest["gguf"].get(role)
        if rel and not (folder / rel).is_file():
            raise ValueError(f"manifest names {rel} but {folder / rel} does not exist")
    data = {"schema": MANIFEST_SCHEMA, "created": time.time(), **manifest}
    path = folder / MANIFEST
    atomic_write_json(path, data)
    return path


def load_manifest(home: Home, name: str) -> dict[str, Any]:
    """The manifest of a complete candidate; UserError naming what is wrong otherwise."""
    folder = candidate_dir(home, name)
    if not folder.is_dir():
        known = ", ".join(c["name"] for c in list_candidates(home)) or "none"
        raise UserError(f"no candidate {name!r} under {home.candidates} (candidates: {known})")
    path = folder / MANIFEST
    if not path.is_file():
        raise UserError(f"candidate {name!r} is incomplete: {path} is missing (training or conversion did not "
                        "finish; the manifest is written last). Re-run training/merge_convert.py for it.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise UserError(f"candidate {name!r}: {path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != MANIFEST_SCHEMA:
        raise UserError(f"candidate {name!r}: {path} is not a {MANIFEST_SCHEMA} manifest")
    return data


def gguf_paths(home: Home, name: str, manifest: dict[str, Any]) -> tuple[Path, Path | None]:
    """Absolute (model, mmproj) of a candidate; UserError when a file is gone."""
    folder = candidate_dir(home, name)
    gguf = manifest.get("gguf") or {}
    if not gguf.get("model"):
        raise UserError(f"candidate {name!r} has no GGUF model (its conversion was skipped or failed); "
                        "llama.cpp cannot serve it")
    model = folder / gguf["model"]
    mmproj = folder / gguf["mmproj"] if gguf.get("mmproj") else None
    for p in (model, mmproj):
        if p is not None and not p.is_file():
            raise UserError(f"candidate {name!r}: {p} is missing")
    return model, mmproj


def list_candidates(home: Home) -> list[dict[str, Any]]:
    """Every folder under candidates/, complete (manifest) or not, newest first."""
    if not home.candidates.is_dir():
        return []
    out = []
    for folder in sorted(home.candidates.iterdir()):
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        entry: dict[str, Any] = {"name": folder.name, "path": str(folder)}
        path = folder / MANIFEST
        if path.is_file():
            try:
                m = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                m = None
            if isinstance(m, dict):
                entry.update(status="complete", created=m.get("created"),
                             base_model=(m.get("base_model") or {}).get("name") or (m.get("base_model") or {}).get("path"),
                             recipe=(m.get("recipe") or {}).get("name"),
                             metrics=m.get("metrics") or {}, evals=m.get("evals") or {})
            else:
                entry["status"] = "broken manifest"
        else:
            entry["status"] = "incomplete (no manifest)"
        out.append(entry)
    out.sort(key=lambda e: e.get("created") or 0, reverse=True)
    return out


# --- promotion -------------------------------------------------------------------------


def _read_home_config(home: Home) -> dict[str, Any]:
    if not home.config.exists():
        return {}
    try:
        data = yaml.safe_load(home.config.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"{home.config} is not valid YAML: {yaml_error_line(exc)}") from None
    if not isinstance(data, dict):
        raise UserError(f"{home.config} must hold a mapping of settings")
    return data


def _policy_block(text: str) -> tuple[int, int]:
    """(start, end) character offsets of the top-level `policy:` entry in config.yaml's text, or (len, len).

    The entry is its key line and the indented (or blank) lines under it; a comment at the margin after it
    belongs to what follows. Promote and rollback edit only this span: the user's other lines and comments stay.
    """
    lines = text.splitlines(keepends=True)
    offset, start, end = 0, None, None
    for line in lines:
        if start is None:
            if line.startswith("policy:") or line.startswith("policy :"):
                start = offset
                end = offset + len(line)
        elif line.strip() and not line[0].isspace():
            break
        elif line.strip():
            end = offset + len(line)
        offset += len(line)
    if start is None or end is None:
        return len(text), len(text)
    return start, end


def _with_policy_block(text: str, block: str | None) -> str:
    """`text` with its `policy:` entry replaced by `block` (None: removed; appended when there was none)."""
    start, end = _policy_block(text)
    if start == len(text) and block:  # appended: an empty flow mapping (`{}`, as `conway init` writes) gives way
        text = "".join(line for line in text.splitlines(keepends=True) if line.strip() != "{}")
        start = end = len(text)
    head = text[:start]
    if start == len(text) and head and not head.endswith("\n"):
        head += "\n"
    out = head + (block or "") + text[end:]
    return out if block or yaml.safe_load(out) is not None else out + "{}\n"  # nothing left: an empty mapping


def _promoted_block(policy: dict[str, Any], why: str) -> str:
    key, *body = yaml.safe_dump({"policy": policy}, sort_keys=False).splitlines(keepends=True)
    return key + f"  # set by `conway {why}`; the policy before it is in {PROMOTIONS}\n" + "".join(body)


def _write_home_config(home: Home, text: str) -> None:
    atomic_write_bytes(home.config, text.encode("utf-8"))


def _config_text(home: Home) -> str:
    return home.config.read_text(encoding="utf-8") if home.config.exists() else ""


def _validate(home: Home, text: str, expected: dict[str, Any]) -> None:
    """The new home config must still compose and validate, and say what was meant (nothing half-written)."""
    from conway.config import load_config

    if (yaml.safe_load(text) or {}) != expected:
        raise UserError(f"{home.config} could not be edited in place (its `policy:` entry is not a plain "
                        "block); set the policy by hand")
    probe = home.root / ".config.promote-check.yaml"
    probe.write_text(text, encoding="utf-8")
    try:
        load_config(probe)
    finally:
        probe.unlink(missing_ok=True)


def _journal(home: Home, payload: dict[str, Any]) -> None:
    from conway.store.journal import Journal, make_event

    j = Journal(home.journal_dir)
    try:
        j.append(make_event("conway-cli", 0, "control", payload), sync=True)
    finally:
        j.close()


def candidate_policy(home: Home, name: str, manifest: dict[str, Any]) -> dict[str, Any]:
    """The `policy` settings that serve this candidate through llama.cpp."""
    model, mmproj = gguf_paths(home, name, manifest)
    pol = dict(manifest.get("policy") or {})
    pol.setdefault("kind", "generic")
    pol["model_path"] = str(model)
    if mmproj is not None:
        pol["mmproj_path"] = str(mmproj)
    pol["model"] = f"candidate-{name}"
    pol.pop("endpoint", None)
    return pol


def promote(home: Home, name: str, force: bool = False) -> dict[str, Any]:
    """Point the home's policy at candidate `name`; record and journal the previous policy.

    A candidate trained on rollouts passes `task_eval.rollout_gate` first (or `force`, recorded)."""
    from conway.evals.task_eval import rollout_gate

    if not home.constitution.exists():
        raise UserError(f"{home.root} has no constitution.md; run `conway init` first")
    manifest = load_manifest(home, name)
    forced = rollout_gate(home, name, manifest, force)
    new_policy = candidate_policy(home, name, manifest)
    data = _read_home_config(home)
    previous = data.get("policy")
    data["policy"] = {**({} if not isinstance(previous, dict) else
                         {k: v for k, v in previous.items() if k in ("structured_output", "temperature",
                                                                       "max_tokens", "request_timeout_s")}),
                      **new_policy}
    if previous is None or previous.get("endpoint"):
        data["policy"].pop("endpoint", None)
    text = _config_text(home)
    start, end = _policy_block(text)
    updated = _with_policy_block(text, _promoted_block(data["policy"], f"promote {name}"))
    _validate(home, updated, data)
    entry = {"action": "promote", "candidate": name, "previous_policy": previous, "new_policy": data["policy"],
             "previous_policy_text": text[start:end] if start < end else None, "ts": time.time(),
             **({"forced_past": forced} if forced else {})}
    _append_promotion(home, entry)
    _write_home_config(home, updated)
    _journal(home, {"request": "promote", "candidate": name, "previous_policy": previous,
                    "new_policy": data["policy"]})
    return entry


def rollback(home: Home) -> dict[str, Any]:
    """Restore the policy recorded by the latest promotion that has not been rolled back."""
    history = read_promotions(home)
    stack: list[dict[str, Any]] = []
    for e in history:
        if e.get("action") == "promote":
            stack.append(e)
        elif e.get("action") == "rollback" and stack:
            stack.pop()
    if not stack:
        raise UserError(f"nothing to roll back: no promotion is recorded in {home.root / PROMOTIONS}")
    last = stack[-1]
    data = _read_home_config(home)
    current = data.get("policy")
    if last["previous_policy"] is None:
        data.pop("policy", None)
    else:
        data["policy"] = last["previous_policy"]
    if "previous_policy_text" in last:  # the entry as the user wrote it, comments and all
        block = last["previous_policy_text"]
    else:  # a promotion recorded before the text was kept
        block = yaml.safe_dump({"policy": data["policy"]}, sort_keys=False) if "policy" in data else None
    updated = _with_policy_block(_config_text(home), block)
    _validate(home, updated, data)
    entry = {"action": "rollback", "candidate": last["candidate"], "previous_policy": current,
             "restored_policy": last["previous_policy"], "ts": time.time()}
    _append_promotion(home, entry)
    _write_home_config(home, updated)
    _journal(home, {"request": "rollback", "candidate": last["candidate"], "previous_policy": current,
                    "restored_policy": last["previous_policy"]})
    return entry


def _append_promotion(home: Home, entry: dict[str, Any]) -> None:
    home.root.mkdir(parents=True, exist_ok=True)
    with open(home.root / PROMOTIONS, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_promotions(home: Home) -> list[dict[str, Any]]:
    path = home.root / PROMOTIONS
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict):
            out.append(e)
    return out


# --- candidate-eval ----------------------------------------------------------------------


def newcombe_difference(h1: int, n1: int, h2: int, n2: int) -> tuple[float, float]:
    """95% interval of p2 - p1 for two independent proportions (Newcombe's hybrid score method)."""
    from conway.evals.stats import wilson

    p1, p2 = h1 / n1, h2 / n2
    l1, u1 = wilson(h1, n1)
    l2, u2 = wilson(h2, n2)
    d = p2 - p1
    return (d - ((p2 - l2) ** 2 + (u1 - p1) ** 2) ** 0.5, d + ((u2 - p2) ** 2 + (p1 - l1) ** 2) ** 0.5)


def model_overrides(model: Path, mmproj: Path | None, *, kind: str, backend: str,
                    extra: dict[str, Any] | None = None, model_id: str | None = None) -> list[str]:
    """Config overrides that serve one local GGUF through llama.cpp."""
    out = [f"policy.kind={kind}", f"policy.model_path={model}", f"policy.backend={backend}",
           "policy.endpoint=null"]
    if model_id:
        out.append(f"policy.model={model_id}")
    out.append(f"policy.mmproj_path={mmproj}" if mmproj is not None else "policy.mmproj_path=null")
    for k, v in (extra or {}).items():
        if v is not None and k not in ("kind", "model_path", "mmproj_path", "backend", "endpoint", "model"):
            out.append(f"policy.{k}={v}")
    return out


def _run_one(home: Home, label: str, overrides: list[str], make_suite: Callable[[ConwayConfig], CaseSuite],
             cases: list[Any], progress: bool, spec: PoolSpec | None = None
             ) -> tuple[list[dict[str, Any]], dict[str, Any], str, ConwayConfig, str | None]:
    """Build the policy from `overrides`, run the suite's cases on it, summarise; (records, summary, id, cfg,
    why it was interrupted or None). An interrupted run keeps the cases that finished, in case order.

    `spec`: the cases run in a worker pool whose workers each load this model (a recipe of its config)."""
    from conway.config import load_config
    from conway.policies.factory import build_policy

    cfg = load_config(home.config, overrides)
    policy, pool = None, None
    if spec is not None:
        pool = Pool(spec, PolicyRecipe(cfg, str(home.root)))
    else:
        try:
            policy = build_policy(cfg, home)
        except UserError as exc:
            raise UserError(f"no llama.cpp backend could load the {label} model: {exc}") from None
        except Exception as exc:
            raise UserError(f"no llama.cpp backend could load the {label} model "
                            f"({cfg.policy.model_path}): {type(exc).__name__}: {exc}") from None
    suite = make_suite(cfg)
    interrupted = None
    try:
        records, wall = run_cases(suite, policy, cases, progress=progress, pool=pool)
    except SuiteInterrupted as stop:
        records, wall, interrupted = stop.records, stop.wall_s, stop.reason
    except UserError as exc:  # a worker could not build the policy
        raise UserError(f"no llama.cpp backend could load the {label} model: {exc}") from None
    finally:
        if policy is not None:
            policy.close()
    errors = [r for r in records if r.get("error", "") and "model request failed" in str(r.get("error"))]
    if errors and len(errors) == len(records) and not interrupted:  # nothing to compare: never answered
        raise NoValidDecision(f"the {label} model answered no case: {errors[0]['error']}")
    summary = suite.summarize(records, wall) if records else {}
    model_id = policy.model_id if policy is not None else _answered_by(records, cfg)
    return records, summary, model_id, cfg, interrupted


def _answered_by(records: list[dict[str, Any]], cfg: ConwayConfig) -> str:
    """The model id the workers' answers name (their policies stayed in the workers), else the configured one."""
    ids = sorted({str(r["model_id"]) for r in records if r.get("model_id")})
    return ", ".join(ids) if ids else str(cfg.policy.model or Path(str(cfg.policy.model_path)).stem)


@dataclass
class _HeldOut:
    """The held-out cases both models answer, and how they are run and matched."""

    cases: list[Any]
    what: str
    """How the run is announced."""
    params: dict[str, Any]
    make_suite: Callable[[ConwayConfig], CaseSuite]
    case_key: Callable[[dict[str, Any]], str]
    """What makes two records the same case (an image hash)."""
    cleanup: Callable[[], None] | None = None


def _check_args(suite: str, dataset: str | None, apps: str | None, samples: int, backend: str) -> None:
    if suite not in ("vision-check", "grounding", "tasks"):
        raise UserError(f"unknown suite {suite!r}; candidate-eval knows: vision-check, grounding, tasks")
    if suite == "tasks":
        if not dataset:
            raise UserError("--suite tasks needs --tasks SUITE (the held-out task files)")
    elif suite == "grounding":
        from conway.evals.grounding.check import check_source
        check_source(dataset, apps, False, samples, None)
    elif dataset or apps:
        raise UserError("--dataset and --apps belong to --suite grounding (--tasks to --suite tasks)")
    if samples < 1:
        raise UserError(f"--samples must be at least 1 (got {samples})")
    if backend not in ("llama_cpp", "http"):
        raise UserError(f"--backend must be llama_cpp (in-process) or http (a llama.cpp server); got {backend!r}")


def _base_gguf(manifest: dict[str, Any], name: str, base_model: str | None,
               base_mmproj: str | None) -> tuple[Path, Path | None]:
    """The base model's GGUF and projector: the flags, else what the candidate's manifest records."""
    base_gguf = (manifest.get("base_model") or {}).get("gguf") or {}
    bm = Path(base_model).expanduser() if base_model else (Path(base_gguf["model"]) if base_gguf.get("model") else None)
    bp = Path(base_mmproj).expanduser() if base_mmproj else (Path(base_gguf["mmproj"]) if base_gguf.get("mmproj") else None)
    if bm is None:
        raise UserError(f"candidate {name!r} does not record its base model's GGUF; pass --base-model FILE "
                        "(and --base-mmproj FILE)")
    return bm, bp


def _grounding_cases(out: Path, *, dataset: str | None, apps: str | None, samples: int, seed: int,
                     bbox_format: str, say: Any) -> _HeldOut:
    """One set of grounding cases (one harvest of live screens) for both models."""
    from conway.evals.grounding.check import GroundingSuite, prepare_cases

    cases, suite_params, cleanup = prepare_cases(out, dataset=dataset, apps=apps, samples=samples, seed=seed,
                                                 bbox_format=bbox_format, say=say)
    params = {"suite": "grounding", "samples": len(cases), "seed_sample": seed, **{k: suite_params[k] for k in
              ("source", "dataset", "suite_name", "scoring") if k in suite_params}}
    return _HeldOut(cases, f"{len(cases)} grounding case(s) from {dataset or apps}, seed {seed}", params,
                    GroundingSuite, lambda r: f"{r['id']}@{r['image'].get('sha256')}", cleanup)


def _vision_cases(manifest: dict[str, Any], *, samples: int, seed: int, size: str | None,
                  profile: str | None) -> _HeldOut:
    """Seeded vision-check cases at the manifest's (or --size's) image size and profile."""
    from conway.evals.vision_check import VisionSuite, parse_size

    eval_size = parse_size(size) if size else tuple(manifest.get("eval", {}).get("size") or (0, 0))
    if not eval_size or eval_size == (0, 0):
        raise UserError("--size WxH is needed (the candidate's manifest records no evaluation image size)")
    wh = (int(eval_size[0]), int(eval_size[1]))
    shapes = profile or manifest.get("eval", {}).get("profile") or "standard"
    return _HeldOut(list(range(samples)), f"{samples} vision-check case(s), seed {seed}, {wh[0]}x{wh[1]}, profile {shapes}",
                    {"suite": "vision-check", "samples": samples, "size": list(wh), "profile": shapes},
                    lambda cfg: VisionSuite(cfg, seed, wh, shapes), lambda r: str(r["image"]["sha256"]))


def _held_out(out: Path, manifest: dict[str, Any], *, suite: str, dataset: str | None, apps: str | None,
              samples: int, seed: int, bbox_format: str, size: str | None, profile: str | None,
              tasks: dict[str, Any] | None, say: Any) -> _HeldOut:
    """The held-out cases of the chosen suite (tasks: `{"suite", "cache", "max_steps", "max_seconds"}`)."""
    if suite == "tasks":
        from conway.evals.task_eval import task_held_out
        t = tasks or {}
        return _HeldOut(*task_held_out(out, t["suite"], t.get("cache"), t.get("max_steps"), t.get("max_seconds"),
                                       tuple(t.get("screen") or (1280, 800))))
    if suite == "grounding":
        return _grounding_cases(out, dataset=dataset, apps=apps, samples=samples, seed=seed,
                                bbox_format=bbox_format, say=say)
    return _vision_cases(manifest, samples=samples, seed=seed, size=size, profile=profile)


def _run_both(home: Home, name: str, held: _HeldOut, models: dict[str, tuple[Path, Path | None]],
              manifest: dict[str, Any], backend: str, progress: bool, pool: PoolSpec | None,
              say: Any) -> tuple[dict[str, Any], str | None]:
    """Each model's run of the cases (the candidate first: one no backend can load fails before the base's run is
    spent); (runs by label, why it stopped early or None)."""
    policy_extra = dict(manifest.get("policy") or {})
    kind = policy_extra.pop("kind", "generic")
    runs: dict[str, Any] = {}
    stopped = None
    try:
        for label in ("candidate", "base"):
            model, mmproj = models[label]
            say(f"candidate-eval: {label} {model} on {held.what}")
            overrides = model_overrides(model, mmproj, kind=kind, backend=backend, extra=policy_extra,
                                        model_id=f"candidate-{name}" if label == "candidate" else f"base-{model.stem}")
            runs[label] = _run_one(home, label, overrides, held.make_suite, held.cases, progress, pool)
            if stopped := runs[label][4]:
                break
    except KeyboardInterrupt:  # between the two runs (each run's own Ctrl+C arrives as its interruption)
        stopped = "interrupted (Ctrl+C)"
    except BaseException:
        if held.cleanup:
            held.cleanup()
        raise
    return runs, stopped


def _compare(runs: dict[str, Any], held: _HeldOut, suite: str, name: str,
             models: dict[str, tuple[Path, Path | None]]) -> dict[str, Any]:
    """The report's summary: each model's hits, the difference with its interval, the paired counts."""
    b_rec, b_sum, b_id, _, _ = runs["base"]
    c_rec, c_sum, c_id, _, _ = runs["candidate"]
    b_hashes = [held.case_key(r) for r in b_rec]
    if b_hashes != [held.case_key(r) for r in c_rec]:  # same cases by construction: unless images changed mid-run
        raise UserError("base and candidate did not see the same cases (image hashes differ)")
    n = len(b_rec)
    diff_lo, diff_hi = newcombe_difference(b_sum["hits"], n, c_sum["hits"], n)
    keys = ("hits", "hit_rate", "hit_rate_ci95", "errors", "distance_px", "latency_s")
    return {
        "suite": suite, "cases": n, "cases_sha256": hashlib.sha256("".join(b_hashes).encode()).hexdigest(),
        "base": {"model": str(models["base"][0]), "model_id": b_id, **{k: b_sum[k] for k in keys}},
        "candidate": {"name": name, "model": str(models["candidate"][0]), "model_id": c_id,
                      **{k: c_sum[k] for k in keys}},
        "difference": round(c_sum["hit_rate"] - b_sum["hit_rate"], 4),
        "difference_ci95": [round(diff_lo, 4), round(diff_hi, 4)],
        "paired": {"both_hit": sum(1 for b, c in zip(b_rec, c_rec) if b.get("hit") and c.get("hit")),
                   "only_base_hit": sum(1 for b, c in zip(b_rec, c_rec) if b.get("hit") and not c.get("hit")),
                   "only_candidate_hit": sum(1 for b, c in zip(b_rec, c_rec) if c.get("hit") and not b.get("hit"))},
        **({"references": b_sum["references"]} if b_sum.get("references") else {}),
        "intervals_separated": c_sum["hit_rate_ci95"][0] > b_sum["hit_rate_ci95"][1],
        **_against_chance(b_sum, c_sum),
    }


def _against_chance(b_sum: dict[str, Any], c_sum: dict[str, Any]) -> dict[str, Any]:
    """For a suite whose tasks declare their chance level (conway.evals.chance): that level and where each model's
    interval lies against it. Nothing for suites without one (click suites have their own references)."""
    from conway.evals import chance

    level = (b_sum.get("chance") or {}).get("chance")
    if level is None:
        return {}
    return {"chance": level, "against_chance": {"base": chance.verdict(b_sum["hit_rate_ci95"], level),
                                                "candidate": chance.verdict(c_sum["hit_rate_ci95"], level)}}


def _paired_cases(runs: dict[str, Any]) -> list[dict[str, Any]]:
    """One case per held-out case: the base's and the candidate's answers side by side."""
    return [{"index": b["index"], "image_sha256": b["image"].get("sha256"), "target": b["target"],
             **({"id": b["id"], "instruction": b["instruction"]} if "id" in b else {}),
             "base": {k: b.get(k) for k in ("hit", "predicted", "error", "raw_output")},
             "candidate": {k: c.get(k) for k in ("hit", "predicted", "error", "raw_output")}}
            for b, c in zip(runs["base"][0], runs["candidate"][0])]


def _say_comparison(summary: dict[str, Any], out: Path, say: Any) -> None:
    n = summary["cases"]
    for label in ("base", "candidate"):
        s = summary[label]
        lo, hi = s["hit_rate_ci95"]
        say(f"{label:<9} {s['hits']}/{n} hit = {s['hit_rate']:.1%} (95% CI {lo:.1%}–{hi:.1%})  [{s['model_id']}]")
    diff_lo, diff_hi = newcombe_difference(summary["base"]["hits"], n, summary["candidate"]["hits"], n)  # unrounded
    say(f"difference {summary['difference']:+.1%} (95% CI {diff_lo:+.1%} to {diff_hi:+.1%}); "
        f"intervals {'do not overlap' if summary['intervals_separated'] else 'overlap'}; same {n} cases (sha256 of "
        f"hashes {summary['cases_sha256'][:12]})")
    if summary.get("chance") is not None:  # what was learned is said against chance, not only against the base
        v = summary["against_chance"]
        say(f"chance {summary['chance']:.1%} (a policy acting validly at random): base {v['base']}, candidate "
            f"{v['candidate']}")
    say(f"report: {out}")


def candidate_eval(home: Home, name: str, *, suite: str, samples: int, seed: int, output: str,
                   size: str | None = None, profile: str | None = None, base_model: str | None = None,
                   base_mmproj: str | None = None,
                   backend: str = "llama_cpp", argv: list[str] | None = None, progress: bool = True,
                   say: Any = print, dataset: str | None = None, apps: str | None = None,
                   bbox_format: str = "auto", pool: PoolSpec | None = None,
                   tasks: dict[str, Any] | None = None) -> int:
    """Run the SAME held-out cases on the base and on candidate `name`; write one report.

    Exit codes (`conway.errors.ExitCode`): 0 when the candidate's hit rate is
    above the base's with non-overlapping 95% intervals, 2 otherwise (a
    measurement, not a failure of the command), 3 when either model answered
    no case at all (every request failed: nothing to compare), 1 (UserError)
    for setup problems, 130 when Ctrl+C or SIGTERM cut it short (a partial
    report: each model's finished cases, nothing compared).
    """
    began = time.time()  # the report is built at the end: its times start here
    from conway.evals.report import Report, check_new_output

    _check_args(suite, (tasks or {}).get("suite") if suite == "tasks" else dataset, apps, samples, backend)
    out = check_new_output(output, home)
    manifest = load_manifest(home, name)
    models = {"candidate": gguf_paths(home, name, manifest), "base": _base_gguf(manifest, name, base_model, base_mmproj)}
    held = _held_out(out, manifest, suite=suite, dataset=dataset, apps=apps, samples=samples, seed=seed,
                     bbox_format=bbox_format, size=size, profile=profile, tasks=tasks, say=say)
    runs, stopped = _run_both(home, name, held, models, manifest, backend, progress, pool, say)
    bm, bp = models["base"]
    report_params = {**held.params, "backend": backend, "candidate": name, "base_model": str(bm),
                     "base_mmproj": str(bp) if bp else None}
    if stopped:
        if held.cleanup:
            held.cleanup()
        return _partial(home, out, argv, seed, began, report_params, runs, len(held.cases), stopped, say)
    summary = _compare(runs, held, suite, name, models)
    from conway.evals.task_eval import paired_tasks
    separated = summary["intervals_separated"]
    report = Report("candidate-eval", out, argv=argv, config=runs["base"][3], seed=seed, expected_cases=0,
                    started=began, parameters=report_params)
    report.set_model(f"{runs['base'][2]} vs {runs['candidate'][2]}")
    report.data["pool"] = {"workers": pool.workers, "ray": pool.ray} if pool else {"workers": 1}
    code = ExitCode.PASSED if separated else ExitCode.NOT_PASSED
    report.finish(status="candidate better" if separated else "not separated", exit_code=code, summary=summary,
                  cases_order=_paired_cases(runs) if suite != "tasks" else paired_tasks(runs))
    _say_comparison(summary, out, say)
    _record_eval(home, name, summary, out)
    return code


def _partial(home: Home, out: Path, argv: list[str] | None, seed: int, began: float, params: dict[str, Any],
             runs: dict[str, Any], planned: int, stopped: str, say: Any) -> int:
    """Ctrl+C or SIGTERM: each model's finished cases, summarised apart (no comparison), status partial, 130."""
    from conway.config import load_config
    from conway.evals.report import Report

    done = {label: run for label, run in runs.items() if run[0]}
    cfg = next(iter(done.values()))[3] if done else load_config(home.config, [])
    note = ", ".join(f"{label} {len(run[0])} of {planned}" for label, run in runs.items()) or "no case finished"
    summary: dict[str, Any] = {"suite": params["suite"], "cases_planned": planned,
                               "interrupted": f"{stopped}: {note}; nothing is compared"}
    for label, (records, s, model_id, _, _) in done.items():
        summary[label] = {"model_id": model_id, "cases": len(records),
                          **{k: s[k] for k in ("hits", "hit_rate", "hit_rate_ci95", "errors") if k in s}}
    report = Report("candidate-eval", out, argv=argv, config=cfg, seed=seed, expected_cases=0, started=began,
                    parameters=params)
    report.set_model(" vs ".join(str(run[2]) for run in done.values()) or None)
    report.finish(status="partial", exit_code=ExitCode.INTERRUPTED, summary=summary)
    say(f"candidate-eval: {stopped} ({note}): the report is partial: {out}")
    return ExitCode.INTERRUPTED


def _record_eval(home: Home, name: str, summary: dict[str, Any], report: Path) -> None:
    """Note the latest evaluation in the candidate's folder (the manifest itself is never rewritten)."""
    path = candidate_dir(home, name) / "evals.jsonl"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"ts": time.time(), "report": str(report), **summary}, sort_keys=True, default=str) + "\n")


def render_candidates(items: list[dict[str, Any]], home: Home) -> str:
    """`conway candidates`: one line per candidate (status, recipe, final loss, train-time held-out hits)."""
    if not items:
        return f"no candidates under {home.candidates}"
    lines = []
    for c in items:
        m = c.get("metrics") or {}
        hits, loss = m.get("held_out_hit_rate"), m.get("final_loss")
        lines.append(f"{c['name']:<24} {c['status']:<26} recipe {c.get('recipe') or '-':<14} "
                     f"loss {f'{loss:.4f}' if isinstance(loss, (int, float)) else '-'}"
                     + (f"  train-time held-out hits {hits:.0%}" if isinstance(hits, (int, float)) else ""))
    return "\n".join(lines)
