"""From a command's parsed arguments to what it runs on: the home, the configuration, the worker pool.

Every command handler (`conway.cli.commands`, `conway.cli.tasks`, a suite's own
`run_command`) resolves these first, the same way: flags such as --mock, --endpoint or --max-steps
become configuration overrides, and a command that evaluates a model is
refused (`NO_MODEL`) when none is configured rather than silently run on the
offline mock.
"""

from __future__ import annotations

from pathlib import Path

from conway.errors import UserError
from conway.policies.families import FAMILIES, one_of


def home_of(args, writable: bool = True):
    from conway.store.home import resolve_home
    return resolve_home(args.home, writable=writable)


NO_MODEL = ("no model is configured for this home: give a local GGUF with policy.model_path=MODEL.gguf "
            f"policy.mmproj_path=MMPROJ.gguf (policy.kind {one_of(FAMILIES)}), or an OpenAI-compatible "
            "server with --endpoint URL (as key=value or in config.yaml); --mock runs the offline demo without a model")


def require_model(args, home, cfg) -> None:
    """The default policy is the offline mock: only use it when asked, never silently in place of a model."""
    from conway.config import mock_chosen
    if cfg.policy.kind != "mock" or getattr(args, "mock", False) or getattr(args, "mock_script", None):
        return
    if not mock_chosen(home.config, list(getattr(args, "overrides", []) or [])):
        raise UserError(NO_MODEL)


def model_config_of(args, home, extra: list[str] | None = None):
    """The configuration of a command that evaluates a model: refused (NO_MODEL) when none is configured,
    unless --mock or the mock policy was chosen."""
    cfg = config_of(args, home, extra)
    require_model(args, home, cfg)
    return cfg


def config_of(args, home, extra: list[str] | None = None):
    from conway.config import load_config
    given = list(getattr(args, "overrides", []) or [])
    overrides = list(given)

    def from_flag(flag: str, key: str, value: object) -> None:
        # a flag's value is appended, so it would win silently over an override of the same setting
        for item in given:
            name, _, text = item.lstrip("+~").partition("=")
            if name == key and text != str(value):
                raise UserError(f"{flag} {value} and the override {item} both set {key}; give one of them")
        overrides.append(f"{key}={value}")

    if getattr(args, "mock", False) or getattr(args, "mock_script", None):
        overrides.insert(0, "policy=mock")
        if args.mock_script:
            from_flag("--mock-script", "policy.mock_script", Path(args.mock_script).expanduser().resolve())
    if getattr(args, "endpoint", None):
        from_flag("--endpoint", "policy.endpoint", args.endpoint)
    if getattr(args, "model", None):
        from_flag("--model", "policy.model", args.model)
    if ((getattr(args, "endpoint", None) or getattr(args, "model", None)) and "policy=mock" not in overrides
            and not any(o.lstrip("+").split("=", 1)[0] == "policy" for o in overrides)):
        overrides.insert(0, "policy=generic")  # --endpoint/--model mean a real model (generic unless chosen)
    for flag, key in (("max_steps", "agent.max_steps"), ("max_seconds", "agent.max_seconds")):
        value = getattr(args, flag, None)
        if value is not None:
            if value <= 0:
                raise UserError(f"--{flag.replace('_', '-')} must be positive (got {value})")
            from_flag(f"--{flag.replace('_', '-')}", key, value)
    cfg = load_config(home.config, overrides + (extra or []))
    if getattr(args, "endpoint", None) and cfg.policy.kind == "mock":
        raise UserError("--endpoint was given but the policy is the offline mock (--mock, or policy.kind: mock in "
                        "the home's config.yaml): use one or the other")
    return cfg
