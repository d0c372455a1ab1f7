"""Credentials are found in every string at every depth, redacted wherever Conway writes or prints,
kept out of the model's shell, and a started server's loopback bind cannot be overridden by the back door."""

from __future__ import annotations

import json

import pytest

from conway.actions import Shell
from conway.config import load_config
from conway.errors import UserError
from conway.redact import (
    REDACTED,
    find_secrets,
    known_secret_values,
    looks_like_secret_env,
    redact,
    redact_known,
    redact_text,
    tool_environment,
)

KEY = "sk-abcdefghijklmnopqrstuvwxyz0123"
SHAPES = {
    "openai": "sk-proj-abcdefghijklmnop1234567890",
    "anthropic": "sk-ant-api03-abcdefghijklmnopqrst",
    "hugging face": "hf_abcdefghijklmnopqrstuvwxyzAB",
    "github classic": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github oauth": "gho_abcdefghijklmnopqrstuvwxyz0123456789",
    "github fine-grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "slack bot": "xoxb-1234567890-abcdefghij",
    "slack user": "xoxp-1234567890-abcdefghij",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstu",
    "aws access key": "AKIAIOSFODNN7EXAMPLE",
    "aws session key": "ASIAIOSFODNN7EXAMPLE",
    "gitlab": "glpat-abcdefghijklmnopqrst",
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_key_shape_is_found_alone_inside_text_and_inside_lists(name: str) -> None:
    key = SHAPES[name]
    assert find_secrets({"notes": key}) == ["notes"]
    assert find_secrets({"notes": f"use {key} for the call"}) == ["notes"]
    assert find_secrets({"runtime": {"extra_args": ["--flag", key]}}) == ["runtime.extra_args[1]"]
    assert find_secrets({"a": [[{"b": [key]}]]}) == ["a[0][0].b[0]"]
    assert key not in redact_text(f"before {key} after") and REDACTED in redact_text(f"x {key}")


@pytest.mark.parametrize("text,secret,kept", [
    ("http://user:sk-hunter2hunter2@example.com:8080/v1", "sk-hunter2hunter2", "example.com:8080/v1"),
    ("https://bob:plainpassword@host/v1", "plainpassword", "https://bob:"),
    ("http://host/v1?api_key=abc123def456&model=x", "abc123def456", "model=x"),
    ("http://host/v1?x=1&token=tok_987654321", "tok_987654321", "x=1"),
    ("curl -H 'Authorization: Bearer abcdefgh12345678'", "abcdefgh12345678", "Authorization: Bearer"),
    ("--api-key=plain-value-123", "plain-value-123", "--api-key="),
])
def test_keys_inside_urls_and_flags_are_redacted_but_the_rest_is_kept(text: str, secret: str, kept: str) -> None:
    assert find_secrets({"endpoint": text}) == ["endpoint"]
    out = redact_text(text)
    assert secret not in out and kept in out and REDACTED in out


def test_a_flag_naming_a_secret_makes_the_next_list_item_secret() -> None:
    data = {"runtime": {"extra_args": ["--api-key", "hunter2hunter2", "--threads", "4"]}}
    assert find_secrets(data) == ["runtime.extra_args[1]"]
    assert redact(data) == {"runtime": {"extra_args": ["--api-key", REDACTED, "--threads", "4"]}}


@pytest.mark.parametrize("harmless", ["sk-short", "task-abcdefghijklmnopqrstuvwxyz", "max_tokens", "The AKIA wasn't",
                                      "http://127.0.0.1:8080/v1", "ssh://git@host/repo", "--max-tokens=512",
                                      "a token of appreciation", "hf_short"])
def test_ordinary_strings_are_not_secrets(harmless: str) -> None:
    assert find_secrets({"notes": harmless}) == []
    assert redact_text(harmless) == harmless


def test_the_issue_s_extra_args_key_is_refused_by_config_naming_the_place(initialized_home, capsys) -> None:
    from conway.cli.main import main

    (initialized_home / "config.yaml").write_text(f"runtime:\n  extra_args: [--api-key, {KEY}]\n")
    assert main(["config", "--check"]) == 1
    err = capsys.readouterr()
    assert "runtime.extra_args[1]" in err.err and KEY not in err.err + err.out
    (initialized_home / "config.yaml").write_text("")
    for override in [f"runtime.extra_args=[--api-key,{KEY}]", "runtime.extra_args=[--api-key,hunter2hunter2]",
                     "policy.endpoint=http://user:hunter2hunter2@127.0.0.1:9/v1"]:
        with pytest.raises(UserError) as info:
            load_config(initialized_home / "config.yaml", [override])
        assert "secret" in str(info.value) and "hunter2" not in str(info.value) and KEY not in str(info.value)


def test_reports_redact_every_string_at_every_depth(tmp_path, initialized_home) -> None:
    from conway.evals.report import Report
    from conway.store.home import resolve_home

    cfg = load_config(None, [])
    out = tmp_path / "r.json"
    rep = Report("preflight", out, argv=["preflight", "--endpoint", f"http://u:{KEY}@h/v1"], config=cfg)
    rep.add_case({"check": "endpoint", "detail": f"cannot reach http://u:{KEY}@h/v1", "data": {"args": ["--api-key", "x" * 12]}})
    rep.finish(status="ready", exit_code=0, summary={"note": f"Bearer {KEY}"})
    text = out.read_text()
    assert KEY not in text and "x" * 12 not in text and REDACTED in text
    assert resolve_home(None)  # the home is untouched by a report


def test_config_check_printout_is_redacted() -> None:
    from conway.config import ConwayConfig, to_yaml
    cfg = ConwayConfig()
    cfg.policy.mock_script = f"/tmp/{KEY}.yaml"  # validate_assignment: an odd but valid path string
    assert KEY not in to_yaml(cfg)


# --- the shell's environment -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "HF_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
                                  "AWS_ACCESS_KEY_ID", "PGPASSWORD", "MY_APIKEY", "SLACKTOKEN", "DB_PASSWD",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "ANTHROPIC_API_KEY"])
def test_secret_looking_variable_names(name: str) -> None:
    assert looks_like_secret_env(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "XAUTHORITY", "DISPLAY", "TOKENIZERS_PARALLELISM", "LANG",
                                  "KEYBOARD_LAYOUT", "CONWAY_HOME"])
def test_ordinary_variable_names(name: str) -> None:
    assert not looks_like_secret_env(name)


def test_tool_environment_drops_the_key_variable_and_secret_names_configurably() -> None:
    environ = {"PATH": "/bin", "THE_KEY_VAR": "value-of-key", "HF_TOKEN": "t" * 20, "NEEDED_TOKEN": "n" * 20,
               "CORP_X": "1", "HOME": "/h"}
    env, removed = tool_environment(environ, drop=["THE_KEY_VAR"], drop_patterns=["CORP_*"],
                                    keep=["NEEDED_TOKEN", "THE_KEY_VAR"])
    assert env == {"PATH": "/bin", "NEEDED_TOKEN": "n" * 20, "HOME": "/h"}
    assert removed == ["CORP_X", "HF_TOKEN", "THE_KEY_VAR"]


def test_the_model_s_shell_never_sees_the_api_key(tmp_path, monkeypatch) -> None:
    from conway.tools.registry import build_toolbox

    monkeypatch.setenv("THE_API_KEY_VAR", "value-of-the-api-key-123")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "value-of-a-token-456")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    cfg = load_config(None, ["policy.api_key_env=THE_API_KEY_VAR"])
    box = build_toolbox(cfg.tools, tmp_path, gui=False, api_key_env=cfg.policy.api_key_env)
    result = box.run(Shell(command="echo key=$THE_API_KEY_VAR token=$SOME_SERVICE_TOKEN plain=$PLAIN_SETTING; env"))
    assert result.ok
    assert "value-of-the-api-key-123" not in result.output and "value-of-a-token-456" not in result.output
    assert "plain=visible" in result.output
    cfg = load_config(None, ["tools.shell_env_keep=[SOME_SERVICE_TOKEN]", "tools.shell_env_drop=[PLAIN_*]"])
    box = build_toolbox(cfg.tools, tmp_path, gui=False)
    result = box.run(Shell(command="echo token=$SOME_SERVICE_TOKEN plain=$PLAIN_SETTING"))
    assert "token=value-of-a-token-456" in result.output and "plain=visible" not in result.output


def test_known_secret_values_are_redacted_wherever_they_appear() -> None:
    values = known_secret_values({"MY_KEY": "value-of-key-1", "HF_TOKEN": "short", "PATH": "/usr/bin:/bin"},
                                 ["MY_KEY"])
    assert values == ["value-of-key-1"]  # too short to scan for: 'short'
    data, n = redact_known({"out": "echo value-of-key-1 and value-of-key-1", "x": [f"{KEY}"]}, values)
    assert n == 3 and "value-of-key-1" not in json.dumps(data) and KEY not in json.dumps(data)


# --- a started server's bind address ----------------------------------------------------------------


@pytest.mark.parametrize("args", [["--host", "0.0.0.0"], ["--host=0.0.0.0"], ["--port", "9", "--host", "::"]])
def test_a_host_in_extra_args_needs_allow_remote(args) -> None:
    listed = json.dumps(args)
    with pytest.raises(UserError, match="override the loopback bind"):
        load_config(None, [f"runtime.extra_args={listed}"])
    cfg = load_config(None, [f"runtime.extra_args={listed}", "runtime.allow_remote=true"])
    assert cfg.runtime.extra_args == args
    assert load_config(None, ['runtime.extra_args=["--threads-http","2"]']).runtime.extra_args == ["--threads-http", "2"]
    with pytest.raises(UserError, match="override runtime.extra_args=.*not valid YAML"):  # one clear line
        load_config(None, ["runtime.extra_args=[--host,::]"])


def test_an_env_mapping_names_variables_and_is_not_a_secret() -> None:
    data = {"tools": {"mcp_servers": [{"name": "x", "url": "http://127.0.0.1:1/mcp",
                                       "headers_env": {"Authorization": "MY_TOKEN_VAR"}}]}}
    assert find_secrets(data) == []
    assert redact(data) == data
    data["tools"]["mcp_servers"][0]["headers_env"]["Authorization"] = KEY  # a key where a name belongs
    assert find_secrets(data) == ["tools.mcp_servers[0].headers_env.Authorization"]


def test_preflight_printout_never_shows_a_key(tmp_path, initialized_home, capsys) -> None:
    from fixtures.scripted_server import Reply, ScriptedFakeServer

    from conway.cli.main import main

    leaky = Reply(status=500, body={"error": {"message": f"bad key {KEY} for http://u:{KEY}@h"}})
    with ScriptedFakeServer(replies=[leaky]) as fake:
        assert main(["preflight", "--output", str(tmp_path / "pf.json"), "--endpoint", fake.base_url,
                     "policy=generic", "policy.structured_output=none"]) == 2
    out = capsys.readouterr()
    assert KEY not in out.out + out.err and REDACTED in out.out
    assert KEY not in (tmp_path / "pf.json").read_text()


_SHAPES = {  # the worst inputs each pattern has met: long runs it could start in at every position
    "letters": lambda n: "a" * n,
    "dashes": lambda n: "-" * n,
    "dash-underscore": lambda n: ("-_" * n)[:n],
    "dash-letter": lambda n: ("-a" * n)[:n],
    "url without a password": lambda n: "http://" + "u" * n,
    "url with no @": lambda n: "x://u:" + "p" * n,
    "schemes": lambda n: ("a://" * n)[:n],
    "key prefixes": lambda n: ("sk-" * n)[:n],
    "bearer spaces": lambda n: "Bearer" + " " * n + "!",
    "queries": lambda n: ("?key&" * n)[:n],
    "colons": lambda n: ":" * n,
}


@pytest.mark.parametrize("shape", sorted(_SHAPES))
def test_redaction_is_linear_in_the_text(shape):
    """1 MB of each shape takes about ten times 100 KB (a quadratic pattern: a hundred times)."""
    import time

    def cost(n: int) -> float:
        text = _SHAPES[shape](n)
        best = float("inf")
        for _ in range(2):
            t = time.perf_counter()
            redact_text(text)
            best = min(best, time.perf_counter() - t)
        return best

    small, large = cost(100_000), cost(1_000_000)
    assert large < 35 * max(small, 1e-4)
