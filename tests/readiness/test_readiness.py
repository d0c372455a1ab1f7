"""conway/readiness/: doctor, preflight and probe run the same named checks, so a broken home reads the same in each."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from fixtures.scripted_server import Reply, ScriptedFakeServer

from conway.cli.main import main
from conway.config import load_config
from conway.evals.preflight import select_checks
from conway.policies.backends.backend import Backend
from conway.protocols import Decision, DecisionContext, Policy
from conway.readiness.checks import Check
from conway.readiness.checks.decision import probe
from conway.readiness.checks.host import display_check
from conway.readiness.doctor import doctor
from conway.store.home import resolve_home


def _broken_home(home: Path) -> None:
    """A home with a malformed skill and an MCP server whose program does not exist."""
    main(["init"])
    bad = home / "skills" / "broken"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("no front matter here\n", encoding="utf-8")
    (home / "config.yaml").write_text(yaml.safe_dump({"tools": {"mcp_servers": [
        {"name": "gone", "command": str(home / "no-such-program"), "startup_timeout_s": 5}]}}))


def test_doctor_and_preflight_report_the_same_checks_for_the_same_broken_home(conway_home, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    _broken_home(conway_home)
    home = resolve_home(None)
    cfg = load_config(home.config, ["policy=mock"])
    doc = doctor(cfg, home.scratch, home_root=home.root)
    checks, loaded = select_checks(home, lambda: cfg, desktop=True)
    by_name = {c.check: c for c in checks}
    assert loaded is cfg

    # skills: one function, one record
    assert by_name["skills"].status == "warn" and "1 malformed skill(s) left out" in by_name["skills"].detail
    assert doc["skills"] == by_name["skills"].data and "has no YAML front matter" in doc["skills"]["problems"][0]
    # MCP: the same server record, whether the toolbox or preflight started it
    gone = by_name["mcp: gone"]
    assert gone.status == "warn" and gone.detail.startswith("not available: ")
    assert doc["mcp_servers"] == [gone.data] and doc["mcp_servers"][0]["ok"] is False
    # no display: doctor's display check, the GUI tool's reason and preflight's screenshot all say so
    assert doc["display"] == {"reachable": False, "detail": "no DISPLAY set"}
    assert display_check() == Check("display", "fail", "no DISPLAY set")
    assert doc["tools"]["gui"] == {"runs": False, "detail": "GUI tools unavailable: no DISPLAY set"}
    assert by_name["desktop"].status == "fail" and "(no DISPLAY set)" in by_name["desktop"].detail


def test_an_invalid_config_reads_the_same_in_doctor_and_preflight(initialized_home, tmp_path, capsys):
    (initialized_home / "config.yaml").write_text("agent: {no_such_key: 1}\n")
    assert main(["doctor"]) == 1
    said = capsys.readouterr().err.strip()
    out = tmp_path / "pf.json"
    assert main(["preflight", "--output", str(out)]) == 2
    check = next(c for c in json.loads(out.read_text())["cases"] if c["check"] == "configuration")
    assert check["status"] == "fail" and "no_such_key" in check["detail"]
    assert said == f"conway: error: {check['detail']}"  # one line, the same reason


def test_no_model_configured_reads_the_same_in_probe_and_preflight(initialized_home, tmp_path, capsys):
    (initialized_home / "config.yaml").write_text("policy:\n  kind: generic\n")
    assert main(["probe"]) == 1
    said = capsys.readouterr().err.strip()
    out = tmp_path / "pf.json"
    assert main(["preflight", "--output", str(out)]) == 2
    check = next(c for c in json.loads(out.read_text())["cases"] if c["check"] == "model")
    assert check["status"] == "fail" and "needs a model" in check["detail"]
    assert said == f"conway: error: {check['detail']}"


def test_preflight_s_decision_check_is_the_probe(initialized_home):
    from conway.policies.factory import build_model_policy
    from conway.readiness.checks.model_runtime import decision_check
    with ScriptedFakeServer(replies=[Reply.text("no idea")] * 2) as fake:
        cfg = load_config(None, ["policy=generic", f"policy.endpoint={fake.base_url}",
                                 "policy.structured_output=none"])
        with build_model_policy(cfg, resolve_home(None)) as policy:
            report = probe(policy)
        check = decision_check(cfg, resolve_home(None))
    assert not report.ok and report.problems
    assert check.check == "model answers a decision" and check.status == "fail"
    assert report.problems[0] in check.detail and check.data["answer"] == report.raw_text == "no idea"


class DecideOnly(Policy):
    """A policy that declares only what it must: the protocol's defaults fill in the rest."""

    model_id = "decide-only"

    def decide(self, context: DecisionContext) -> Decision:
        from conway.actions import Wait
        return Decision(raw_text="wait", actions=[Wait(type="wait")], model_id=self.model_id)


def test_probe_reads_the_policy_protocol_s_declared_defaults():
    policy = DecideOnly()
    assert policy.structured_mode() is None and policy.structured_support() is None
    report = probe(policy)
    assert report.ok and report.actions == ["wait()"]
    assert report.structured_output is None and report.structured_support is None and report.structured_detail == {}
    assert "structured output" not in report.render()


class CompleteOnly(Backend):
    kind, model_id = "stub", "stub-model"

    def structured_support(self):
        return ["json_object"]

    def complete(self, messages, **kw):
        raise AssertionError("not asked in this test")


def test_a_backend_inherits_the_optional_members_and_a_model_policy_reports_them():
    from conway.geometry import Convention
    from conway.policies.base import ModelPolicy
    from conway.policies.families.generic.adapter import GenericAdapter
    from conway.policies.settings import PolicySettings
    backend = CompleteOnly()
    assert backend.context_window() is None and backend.count_tokens("text") is None
    assert dict(backend.structured_report) == {} and backend.close() is None
    policy = ModelPolicy(GenericAdapter(), backend, PolicySettings(convention=Convention.ABSOLUTE,
                                                                          resize_rule="qwen2.5-vl"))
    assert policy.context_window() is None  # unknown: the configured budget holds
    assert policy.structured_mode() == "json_object"
    assert policy.structured_support() == (["json_object"], {})


def test_a_check_records_its_data_only_when_there_is_some():
    assert Check("x", "ok", "fine").record() == {"check": "x", "status": "ok", "detail": "fine"}
    assert Check("x", "warn", "hm", {"n": 1}).record()["data"] == {"n": 1}
    assert Check("x", "ok", "").ok and not Check("x", "not_checked", "").ok


def test_doctor_lists_every_extra_pyproject_declares(initialized_home, capsys):
    import tomllib
    declared = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    # dev: the developers' tools; goldens: what the golden builder runs OSWorld's agents with. Neither is a feature.
    extras = set(declared["project"]["optional-dependencies"]) - {"dev", "goldens"}
    assert main(["doctor", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["extras"]
    assert set(listed) == extras, sorted(extras ^ set(listed))
    assert set(listed["mcp"]) == {"mcp", "jsonschema"} and set(listed["ray"]) == {"ray"}
