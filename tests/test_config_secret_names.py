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
