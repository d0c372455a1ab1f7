"""The `conway` command's subcommands: one small function per command (or group) that adds its parser.

`conway.cli.main.build_parser` adds every piece `parser_pieces` lists, in order: the command line's own
`COMMANDS` (a new one is its function here and one entry in `COMMANDS`; its behaviour: one function in
`conway/cli/commands.py`) and each eval suite's command, which its suite module declares and
`conway.evals.suites` registers (`SuiteKind.command`: a new suite needs no edit here).
"""

from __future__ import annotations

import argparse

from conway.args.command import AddParser, Subparsers, add_desktop_args, add_model_args, add_overrides, cmd
from conway.args.costs import add_cost_args
from conway.args.pool import add_pool_args
from conway.cli import tasks as tasks_cli
from conway.errors import exit_codes_text
from conway.observe.vision_cases import PROFILES as VISION_PROFILES
from conway.policies.families import FAMILIES


def _add_budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-steps", type=int, metavar="N",
                   help="stop after the model has made N decisions (cycles without an answer -- rate limits, "
                        "failed or timed-out requests -- do not count; --max-seconds bounds those, and "
                        "agent.max_permanent_failures identical failures that retrying cannot cure end the run)")
    p.add_argument("--max-seconds", type=float, metavar="S", help="stop after S seconds (checked between steps)")
    p.add_argument("--quiet", action="store_true", help="print nothing per cycle (state and journal still record all)")


def _init(sub: Subparsers) -> None:
    cmd(sub, "init", "create the home layout, a starter constitution.md and goals.md (existing files are kept)")


def _doctor(sub: Subparsers) -> None:
    p = cmd(sub, "doctor", "report Python, platform, CPU, memory, disk, optional extras and which tools actually run here")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_overrides(p)


def _run(sub: Subparsers) -> None:
    p = cmd(sub, "run", "run the agent continuously until stopped",
            "Run the continuous loop: observe, decide, act, record, forever (or within --max-steps/--max-seconds).\n"
            "A model's finish is recorded and the loop carries on. Never reads stdin; control it from another\n"
            "terminal with `conway status|pause|resume|stop`.")
    add_model_args(p)
    _add_budget_args(p)
    p.add_argument("--observe", action="store_true",
                   help="capture real observations and plan without dispatching any action (dry run)")
    _add_video_arg(p)
    add_overrides(p)


def _add_video_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--video", action="store_true",
                   help="record the screen to HOME/videos/<session>.mp4 (ffmpeg x11grab, 5 frames/s, at most "
                        "200 MB; off by default); a video that fails is said in one line and the run goes on")


def _start(sub: Subparsers) -> None:
    p = cmd(sub, "start", "run one session; a finish ends it",
            "Run a single session. Without --execute the session only plans (no action is dispatched).")
    add_model_args(p)
    _add_budget_args(p)
    p.add_argument("--execute", action="store_true", help="dispatch actions (default: plan only)")
    p.add_argument("--task", metavar="TEXT", help="the task for this session")
    p.add_argument("--task-file", metavar="FILE", help="a UTF-8 file holding the task (may declare acceptance criteria)")
    p.add_argument("--output", metavar="FILE", help="also write a session report (a new file outside the home)")
    add_desktop_args(p, "default: this machine's own screen, as `conway run`. On a task desktop the task file's "
                        "criteria are checked there, in its home")
    add_overrides(p)


def _status(sub: Subparsers) -> None:
    p = cmd(sub, "status", "show the agent's state, whether its pid is alive, the pending intent and the last events")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def _pause(sub: Subparsers) -> None:
    cmd(sub, "pause", "ask the running agent to pause between steps")


def _resume(sub: Subparsers) -> None:
    cmd(sub, "resume", "ask a paused agent to continue")


def _stop(sub: Subparsers) -> None:
    cmd(sub, "stop", "ask the running agent to stop (an action returned by an in-flight decision is discarded)")


def _takeover(sub: Subparsers) -> None:
    cmd(sub, "takeover", "pause the running agent and act yourself; your input is recorded as human steps",
        "The agent holds (as for pause) while you act on its screen (the real display, or the live view's\n"
        "screen with `conway view --serve`). Your clicks, drags, typing, keys and scrolls are recorded through\n"
        "the X server as `human` steps with screenshots. `conway handback` gives the screen back: the agent goes\n"
        "on from a fresh look, told what you did.")


def _handback(sub: Subparsers) -> None:
    cmd(sub, "handback", "give the screen back to the agent after `conway takeover`")


def _record(sub: Subparsers) -> None:
    p = cmd(sub, "record", "record a demonstration: a session with no model, you acting on the screen",
            "A session that starts taken over: everything you do on the display ($DISPLAY) is journaled as\n"
            "human steps with screenshots, until `conway handback`, `conway stop` or Ctrl+C. `conway export`\n"
            "writes them as labelled rows (a person's action is the label).")
    p.add_argument("--task", metavar="TEXT", help="what you are demonstrating (the instruction of the exported rows)")
    p.add_argument("--max-seconds", type=float, metavar="S", help="end the recording after S seconds")
    _add_video_arg(p)
    add_overrides(p)


def _rerun(sub: Subparsers) -> None:
    p = cmd(sub, "rerun", "replay a recorded session's actions without the model on a fresh desktop, and compare",
            "Replay the actions a session ran (the agent's and a person's) on a fresh disposable desktop, without\n"
            "the model. A session of `conway tasks run` (its home under REPORT.tasks/) gets its task's setup first\n"
            "and its checker's score at the end, beside the recorded one. Before each action the screen is\n"
            "compared with the recorded one (the share of pixels that differ); the first divergence is written\n"
            "side by side. Screenshots rotated away are said; those steps are still replayed.\n"
            + exit_codes_text("the score was reproduced (a session without a task: no step diverged)",
                              "it was not (or a step diverged)", model=False))
    p.add_argument("--session", required=True, metavar="ID", help="the session to replay (in this home's journal)")
    p.add_argument("--output", metavar="DIR", help="where rerun.json and the divergence picture go "
                                                   "(default HOME/reruns/<session>-<time>)")
    p.add_argument("--threshold", type=float, default=0.0005, metavar="F",
                   help="a step diverges when more than this share of its screen's pixels differs (default 0.0005: "
                        "a few words of text; a blinking caret is a quarter of that)")
    add_desktop_args(p, "default: the provider the task's report ran on, else local")
    add_overrides(p)


def _config(sub: Subparsers) -> None:
    p = cmd(sub, "config", "validate and print the resolved configuration")
    p.add_argument("--check", action="store_true", help="validate (the default action) and print the result")
    add_overrides(p)


def _export(sub: Subparsers) -> None:
    p = cmd(sub, "export", "write the journal as trajectory records (JSONL, one per step)",
            "Write recorded steps as conway-traj/1 records (JSONL; image bytes never included) or, with\n"
            "--format hf, a Hugging Face datasets folder with the screenshots as an Image feature.\n"
            "Exports can hold private screen content: review them before sharing.")
    p.add_argument("--output", required=True, metavar="FILE", help="new file (or folder, --format hf) to write (never overwritten)")
    p.add_argument("--include-dry-runs", action="store_true", help="also export planned-only steps")
    p.add_argument("--include-uncertain", action="store_true", help="also export steps whose outcome is uncertain")
    p.add_argument("--format", default="jsonl", choices=("jsonl", "hf"), dest="fmt",
                   help="jsonl (default) or hf (a datasets folder with images)")
    p.add_argument("--style", choices=tuple(FAMILIES),
                   help="add each step's target turn in this model family's own action format")
    p.add_argument("--skip-missing", action="store_true",
                   help="leave out steps whose screenshot file is gone (default: keep them, marked image_missing)")
    p.add_argument("--from-report", metavar="REPORT",
                   help="export a vision-check or grounding-check report's cases (labelled by their targets), or a "
                        "tasks report's sessions (labelled by their checkers), instead of the journal")


def _view(sub: Subparsers) -> None:
    p = cmd(sub, "view", "see sessions (or a vision-, grounding-check, candidate-eval or tasks report) in a browser; "
            "--serve to label",
            "Write a self-contained static site (no network needed; open it from file://) for one session or an\n"
            "index of all sessions, or a report's cases. --serve answers the same pages from 127.0.0.1 and is\n"
            "the only mode that writes labels (labels.jsonl, source review, as `conway review` does).")
    p.add_argument("report", nargs="?", metavar="REPORT", help="a vision-check, grounding-check, candidate-eval or tasks report")
    p.add_argument("--session", metavar="ID", help="only this session")
    p.add_argument("--last", action="store_true", help="only the latest session")
    p.add_argument("--output", metavar="DIR", help="folder for the site (new, empty or an earlier view; default HOME/view)")
    p.add_argument("--serve", action="store_true",
                   help="serve from 127.0.0.1 on a free port, with review buttons; open the address it prints (its "
                   "token lets only you in)")
    p.add_argument("--port", type=int, default=0, metavar="N", help="port for --serve (default: any free one)")
    p.add_argument("--page-size", type=int, default=100, metavar="N", help="steps per page (default 100)")
    p.add_argument("--live", action="append", metavar="DIR",
                   help="with --serve: also watch the running sessions under DIR live (a Conway home, or a folder "
                        "of them such as a tasks report's REPORT.tasks/); the home itself is always watched")


# --- experience → candidates (labels, training outputs, promotion) ---


def _review(sub: Subparsers) -> None:
    p = cmd(sub, "review", "label recorded steps as a person: correct, wrong (with the corrected action) or redundant",
            "Labels go to labels.jsonl beside the journal (source: review); the journal is never changed.\n"
            "Interactive by default; --step N --verdict V [--action JSON] labels one step from a script.")
    p.add_argument("--session", metavar="ID", help="only steps of this session")
    p.add_argument("--step", type=int, metavar="N", help="label this step (with --verdict)")
    p.add_argument("--verdict", choices=("correct", "wrong", "redundant"), help="the label for --step")
    p.add_argument("--action", metavar="JSON", help="the corrected action for a wrong step (captured-screen pixels)")
    p.add_argument("--note", default="", help="free text kept with the label")
    p.add_argument("--hindsight", action="store_true", help="mark the label as made in hindsight")
    p.add_argument("--include-dry-runs", action="store_true", help="also offer planned-only steps")


def _candidates(sub: Subparsers) -> None:
    p = cmd(sub, "candidates", "list trained candidate policies under the home (complete ones have a manifest)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")


def _candidate_eval(sub: Subparsers) -> None:
    p = cmd(sub, "candidate-eval", "run the same held-out cases on the base and on a candidate through llama.cpp",
            "Serve the base model and the candidate through llama.cpp one after the other, run the same\n"
            "seeded vision-check cases (or --suite grounding: the same --dataset / --apps cases) on both and\n"
            "report each hit rate with its 95% interval and the difference.\n"
            + exit_codes_text("candidate better with separated intervals", "not separated"))
    p.add_argument("name", help="candidate name (a folder under candidates/)")
    p.add_argument("--suite", default="vision-check", choices=("vision-check", "grounding", "tasks"),
                   help="the held-out suite (tasks: the task files of --tasks, each once on its own desktop, scored "
                        "by its checker)")
    p.add_argument("--tasks", metavar="SUITE", help="tasks: the held-out task suite (a folder or task files)")
    p.add_argument("--cache", metavar="DIR", help="tasks: the local cache in OSWorld's layout")
    p.add_argument("--max-steps", type=int, metavar="N", help="tasks: decisions per task (default: the task's)")
    p.add_argument("--screen", metavar="WxH", default="1280x800", help="tasks: each desktop's screen size")
    p.add_argument("--dataset", metavar="DIR", help="grounding: a local ScreenSpot-style folder")
    p.add_argument("--apps", metavar="SUITE", help="grounding: a grounding suite (harvested once, used for both)")
    p.add_argument("--bbox-format", default="auto", choices=("auto", "xywh", "xyxy"), help="grounding: dataset boxes")
    p.add_argument("--samples", type=int, default=50, metavar="N", help="number of cases (default 50)")
    p.add_argument("--seed", type=int, default=1000, metavar="S", help="seed of the held-out cases (default 1000)")
    p.add_argument("--size", metavar="WxH", help="image size (default: the candidate's manifest)")
    p.add_argument("--profile", default=None, choices=tuple(VISION_PROFILES),
                   help="vision-check case profile (default: the candidate's manifest, else standard)")
    p.add_argument("--base-model", metavar="GGUF", help="the base model (default: the manifest's base GGUF)")
    p.add_argument("--base-mmproj", metavar="GGUF", help="the base model's vision projector")
    p.add_argument("--backend", default="llama_cpp", choices=("llama_cpp", "http"),
                   help="llama_cpp: in-process llama-cpp-python (default); http: a llama.cpp server Conway starts")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_pool_args(p, endpoints=False, resume=False)  # each worker loads the model of the run it serves


def _rollouts(sub: Subparsers) -> None:
    p = cmd(sub, "rollouts", "run each task of a suite K times with sampling on: rewards from its checker, for training",
            "Run each task of a suite --samples K times through the real loop, each rollout on its own disposable\n"
            "desktop (as `conway tasks run`), sampling at --temperature with seed --seed + K x the task's index +\n"
            "sample (every rollout its own; sent with every request). Per rollout it keeps the session, every\n"
            "request the policy sent (messages, images, the model's raw answer: requests.jsonl beside its home) and\n"
            "the task checker's score as the reward; DIR/manifest.json (written last) names the suite, the\n"
            "policy, the seeds and per task its K rewards. A set whose rewards are all equal is said to carry no\n"
            "signal.\n\n"
            "  conway rollouts SUITE policy.model_path=M.gguf policy.mmproj_path=P.gguf --samples 8 --output rollouts/r0\n"
            "  python -m training.train_lora --recipe tiny_cpu data.path=rollouts/r0 ...   (rejection-sampling SFT)\n"
            "  python -m training.grpo --recipe grpo_tiny_cpu data.path=rollouts/r0 ...    (policy gradient)\n\n"
            "Exit 0 rollouts were scored, 2 none was, 1 bad input (a suite with no runnable task), 130 Ctrl+C.")
    p.add_argument("suite", nargs="+", metavar="SUITE", help=tasks_cli.SUITE_HELP + "; then any key=value overrides")
    p.add_argument("--samples", type=int, default=4, metavar="K", help="rollouts per task (default 4)")
    p.add_argument("--temperature", type=float, default=1.0, metavar="T", help="sampling temperature (default 1.0)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of sample k is S + k (default 0)")
    p.add_argument("--output", required=True, metavar="DIR", help="a new folder for the rollout set")
    p.add_argument("--cache", metavar="DIR", help="the local cache in OSWorld's layout (<DIR>/<task id>/…)")
    add_model_args(p)
    p.add_argument("--mock-scripts", metavar="DIR", help="drive each task with the mock script DIR/<task id>.yaml "
                   "(as `tasks run --mock-scripts`; implies --mock)")
    p.add_argument("--max-steps", type=int, metavar="N", help="decisions per rollout (default: the task's, else 15)")
    p.add_argument("--max-seconds", type=float, metavar="S", help="time per rollout (default: the task's, else 600)")
    p.add_argument("--screen", metavar="WxH", default="1280x800",
                   help="each desktop's screen size (default 1280x800, as `tasks run`; OSWorld's VM is 1920x1080; "
                        "e.g. 84x84 for the tiny demo VLM)")
    p.add_argument("--quiet", action="store_true", help="no line per rollout")
    g = p.add_argument_group("Best of N (conway judge, run over the set once it is written)")
    g.add_argument("--judge", action="store_true", help="then judge the set with the acting model (DIR/judged.json)")
    g.add_argument("--judge-endpoint", metavar="URL", help="then judge the set with the model at URL (implies --judge)")
    g.add_argument("--judge-model", metavar="ID", help="the judge endpoint's model id, when it serves several")
    add_cost_args(p)
    add_pool_args(p, resume=False)  # each worker rolls out one task at a time, each on its own desktop


def _promote(sub: Subparsers) -> None:
    p = cmd(sub, "promote", "make a candidate the configured policy (or --rollback to the previous one)",
            "Rewrite the policy section of the home's config.yaml to serve the candidate's GGUF, recording\n"
            "the previous section in promotions.jsonl and the journal. Nothing promotes by itself.")
    p.add_argument("name", nargs="?", help="candidate name")
    p.add_argument("--rollback", action="store_true", help="restore the policy the last promotion replaced")
    p.add_argument("--force", action="store_true", help="promote a candidate trained on rollouts even when the gate "
                   "refuses it (rollouts of another policy than the served one, or no candidate-eval on tasks above "
                   "its base); the reasons are recorded")


def _replay(sub: Subparsers) -> None:
    p = cmd(sub, "replay", "feed recorded steps to a policy and score agreement with labelled actions (nothing executed)")
    add_model_args(p)
    p.add_argument("--trajectory", required=True, metavar="FILE", help="a conway-traj/1 JSONL from `conway export`")
    p.add_argument("--candidate", metavar="NAME", help="replay through this candidate's GGUF (llama.cpp)")
    p.add_argument("--against", default="labels", choices=("labels", "recorded"),
                   help="compare with labelled actions only (default) or also the recorded ones")
    p.add_argument("--tolerance-px", type=float, default=20.0, help="point distance that agrees when no target box")
    p.add_argument("--limit", type=int, metavar="N", help="replay at most N steps")
    p.add_argument("--skip-missing", action="store_true", help="leave out steps whose screenshot file is gone")
    p.add_argument("--output", required=True, metavar="FILE", help="new report file (never overwritten; not in the home)")
    add_overrides(p)


def _skills(sub: Subparsers) -> None:
    p = cmd(sub, "skills", "list the Agent Skills the agent is offered, and the malformed ones left out (with why)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    add_overrides(p)


def _mcp_serve(sub: Subparsers) -> None:
    p = cmd(sub, "mcp-serve", "serve this home's status, control, export and checks to another agent over MCP",
            "Expose status, recent journal events, pause/resume/stop, export, vision-check and preflight as\n"
            "MCP tools (stdio by default). Never the desktop or the agent's tools.")
    add_model_args(p)
    p.add_argument("--http", type=int, metavar="PORT", help="Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio")
    add_overrides(p)


# --- checks (conway/evals; preflight, vision-check, grounding-check and acceptance-check: their suites' own) ---


def _sweep(sub: Subparsers) -> None:
    p = cmd(sub, "sweep", "run vision-check, grounding-check or tasks run over a grid of models, presets and seeds: a "
            "table",
            "Run one eval command for every cell of a grid (a YAML file: command, args, grid of endpoint / model /\n"
            "policy preset / seed / --flag / any config key) into DIR, one report per cell, then DIR/sweep.json: each\n"
            "cell's rate with its 95% interval and whether it lies clearly below the best cell. Run it again into\n"
            "the same DIR to go on: finished cells are kept, one Ctrl+C cut short is resumed. The worker-pool\n"
            "flags apply to every cell. Example files: evals/sweeps/example.yaml, evals/sweeps/tasks-mock.yaml.\n"
            "Exit 0 done, 130 interrupted, 1 setup error.")
    p.add_argument("file", metavar="SWEEP.yaml", help="the sweep: command, args, grid")
    p.add_argument("--output", required=True, metavar="DIR", help="folder of the cells' reports and sweep.json")
    g = p.add_argument_group("worker pool, for every cell")
    g.add_argument("--workers", type=int, default=1, metavar="N", help="worker processes (or Ray actors) per cell")
    g.add_argument("--ray", metavar="ADDRESS", help="run the workers on the Ray cluster at ADDRESS")
    g.add_argument("--pool-endpoint", action="append", default=[], metavar="URL[@SLOTS]",
                   help="endpoints with their slots (see vision-check --help)")


def _report(sub: Subparsers) -> None:
    p = cmd(sub, "report", "print a readable summary (a table) of any Conway report")
    p.add_argument("file", metavar="FILE", help="a conway-report/1 JSON file")


# --- models (conway/readiness/probe.py, conway/runtime) ---


def _probe(sub: Subparsers) -> None:
    p = cmd(sub, "probe", "send one synthetic PNG through the configured policy and check the answer parses",
            "Send a generated PNG (never the desktop) through the chosen policy and backend; report the model\n"
            "id, latency, the output constraint the backend honours and whether the answer is a valid action.\n"
            "A local model (policy.model_path) is loaded or served the way `run` would. Exit 0 pass, 2 fail,\n"
            "1 setup error.")
    add_model_args(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    add_overrides(p)


def _models(sub: Subparsers) -> None:
    p = cmd(sub, "models", "list what an endpoint serves and the local GGUF files the configuration names",
            "List the models an OpenAI-compatible endpoint serves (GET /v1/models) and the local GGUF model\n"
            "and mmproj files of the configuration, with their metadata and a memory estimate.")
    p.add_argument("--endpoint", metavar="URL", help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")
    p.add_argument("--conformance", action="store_true",
                   help="instead: what the configured preset sends (window, tokens needed against the server's "
                        "context, sampling, encoding) and every deviation from its official agent's request, one "
                        "line each (exit 1 when the context is too small)")
    p.add_argument("--check-server", action="store_true",
                   help="with --conformance: also ask the endpoint how many tokens it makes of a screenshot of "
                        "several shapes, against the family's processor (4 one-token completions), and whether it "
                        "renders the model's own chat template (exit 1 when either differs)")
    p.add_argument("--screen", metavar="WxH", default="1920x1080",
                   help="with --conformance: the screen the window is sized for (default 1920x1080, OSWorld's)")
    add_overrides(p)


COMMANDS: dict[str, AddParser] = {
    "init": _init,
    "doctor": _doctor,
    "run": _run,
    "start": _start,
    "status": _status,
    "pause": _pause,
    "resume": _resume,
    "stop": _stop,
    "takeover": _takeover,
    "handback": _handback,
    "record": _record,
    "rerun": _rerun,
    "config": _config,
    "export": _export,
    "view": _view,
    "review": _review,
    "candidates": _candidates,
    "candidate-eval": _candidate_eval,
    "promote": _promote,
    "rollouts": _rollouts,
    "replay": _replay,
    "skills": _skills,
    "mcp-serve": _mcp_serve,
    "tasks": tasks_cli.add_parser,  # `conway tasks list|…`: a group of its own (conway/cli/tasks.py)
    "sweep": _sweep,
    "report": _report,
    "probe": _probe,
    "models": _models,
}
"""The command line's own commands (or groups), in the order `conway --help` lists them; each eval suite's
command (`conway.evals.suites`) goes in after the one its piece names."""


def parser_pieces(only: str | None = None) -> list[AddParser]:
    """Every command's parser piece in `conway --help` order: COMMANDS with each suite's command after its anchor.

    `only`: a command of the command line's own (`status`, `stop` …) needs nothing else to be parsed, so its piece
    alone is returned and the suites (and the configuration they import) are not loaded: `conway stop` starts in
    the time it did before suites brought their own commands."""
    if only in COMMANDS:
        return [COMMANDS[only]]
    from conway.evals.suites import having  # imports every suite: only when a suite's command may be asked for

    order = list(COMMANDS)
    adds = dict(COMMANDS)
    waiting = [kind.command for kind in having("command") if kind.command is not None]
    while waiting:  # an anchor may itself be a suite's command: place what can be placed, then go again
        ready = [piece for piece in waiting if piece.after in adds]
        if not ready:
            raise ValueError(f"suite commands after unknown commands: {[(p.name, p.after) for p in waiting]}")
        for piece in reversed(ready):  # reversed: pieces with one anchor end up in registration order
            order.insert(order.index(piece.after) + 1, piece.name)
            adds[piece.name] = piece.add_parser
        waiting = [piece for piece in waiting if piece not in ready]
    return [adds[name] for name in order]
