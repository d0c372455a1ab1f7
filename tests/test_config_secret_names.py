"""Each secret-looking key name is refused on its own: the values here are harmless, so only the name matches."""

from __future__ import annotations

import pytest

from conway.config import load_config
from conway.errors import UserError

SECRET_NAMES = ["api_key", "api-key", "apikey", "OPENAI_API_KEY", "client_secret", "secret", "password",
                "db_passwd", "Authorization", "bearer", "access_token", "access-token", "auth_token", "token",
                "github_token"]
HARMLESS = "plain words"


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_a_secret_key_name_in_the_home_config_is_refused(tmp_path, name):
    config = tmp_path / "config.yaml"
    config.write_text(f"policy:\n  {name}: {HARMLESS}\n")
    with pytest.raises(UserError, match=rf"holds a secret at: policy\.{name}\b"):
        load_config(config, [])


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_a_secret_key_name_in_a_key_value_override_is_refused(name):
    with pytest.raises(UserError, match=rf"refusing secret-looking override\(s\): policy\.{name}\b"):
        load_config(None, [f"policy.{name}={HARMLESS}"])


@pytest.mark.parametrize("name,value", [("max_tokens", 64), ("api_key_env", "MY_KEY"), ("image_max_tokens", 1024)])
def test_names_that_only_resemble_secrets_are_accepted(tmp_path, name, value):
    config = tmp_path / "config.yaml"
    config.write_text(f"policy:\n  {name}: {value}\n")
    assert getattr(load_config(config, []).policy, name) == value
    assert getattr(load_config(None, [f"policy.{name}={value}"]).policy, name) == value


def test_a_ratio_named_after_tokens_is_a_setting_not_a_secret(tmp_path):
    """`context.chars_per_token` holds a number, and a number is never a credential whatever its key's name says:
    it can be set as an override and in config.yaml, and is printed as itself (it was refused as
    secret-looking and printed as <redacted>)."""
    from conway.config import to_yaml
    from conway.redact import find_secrets, redact

    assert load_config(None, ["context.chars_per_token=3"]).context.chars_per_token == 3.0
    config = tmp_path / "config.yaml"
    config.write_text("context:\n  chars_per_token: 4.5\n")
    loaded = load_config(config, [])
    assert loaded.context.chars_per_token == 4.5
    assert "chars_per_token: 4.5" in to_yaml(loaded)
    assert find_secrets({"context": {"chars_per_token": 2.5}}) == []
    assert redact({"chars_per_token": 2.5, "token": "plain words"}) == {"chars_per_token": 2.5, "token": "<redacted>"}


def test_a_long_whole_number_under_a_credential_name_is_still_a_secret():
    """A PIN or a numeric key written unquoted in YAML is an int: redacted and found, while a short count is not."""
    from conway.redact import find_secrets, redact

    assert redact({"password": 12345678, "api_key": 4242424242, "chars_per_token": 3}) == {
        "password": "<redacted>", "api_key": "<redacted>", "chars_per_token": 3}
    assert find_secrets({"auth": {"secret": 987654}}) == ["auth.secret"]


@pytest.mark.parametrize("override", ["policy.token=12345678", "policy.password=1234", "policy.api_key=0.5"])
def test_a_number_under_a_credential_name_is_still_refused_and_never_echoed(override):
    """A number is no credential, but such a key is no setting either: refused, its value not repeated."""
    with pytest.raises(UserError) as caught:
        load_config(None, [override])
    assert override.split("=", 1)[1] not in str(caught.value)
