"""The desktop provider seam: providers by short name, built in one place, the runner protocol's defaults and
deviations, the pause after each action, and the `local` provider on a real disposable desktop."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers.task_desktop import need_desktop

from conway.config import ConwayConfig, TasksConfig
from conway.desktops import (
    PROVIDERS,
    Desktop,
    DesktopRequest,
    StepLimits,
    open_desktop,
    provider,
)
from conway.errors import UserError


def test_every_registered_provider_declares_its_own_name() -> None:
    for name in PROVIDERS:
        assert provider(name).name == name


def test_an_unknown_provider_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(UserError) as caught:
        provider("vmware")
    said = str(caught.value)
    assert "\n" not in said and "'vmware'" in said and "local" in said and "osworld" in said


def test_the_config_takes_a_provider_name_and_refuses_a_malformed_one() -> None:
    assert ConwayConfig.model_validate({"tasks": {"desktop": "osworld"}}).tasks.desktop == "osworld"
    with pytest.raises(ValueError):
        TasksConfig(desktop="Local Desktop")
    with pytest.raises(ValueError):
        TasksConfig(desktop_url="file:///etc/passwd")


def test_osworlds_runner_protocol_is_the_default_on_every_provider() -> None:
    """One protocol for OSWorld-format tasks (conway/evals/task_protocol.py, issue 44's settings), whichever
    provider gives the desktop: OSWorld's lib_run_single numbers by default, any other value a named deviation."""
    from conway.evals.task_protocol import deviations

    for name in ("local", "osworld"):
        settings = TasksConfig(desktop=name)
        assert deviations(settings) == []
        assert (settings.wait_after_setup_s, settings.sleep_after_action_s, settings.settle_before_eval_s,
                settings.max_steps) == (60, 0, 20, 15)
    quick = TasksConfig(desktop="osworld", wait_after_setup_s=0, settle_before_eval_s=1.5)
    assert deviations(quick) == ["tasks.wait_after_setup_s=0 (the wait after setup; OSWorld's runner: 60)",
                                 "tasks.settle_before_eval_s=1.5 (the settle before evaluation; OSWorld's runner: 20)"]


def test_osworld_tasks_are_planned_against_the_guests_steps_not_this_machines_programs(tmp_path) -> None:
    from conway.evals.tasks_run import plan_cases
    from conway.tasks.task import load_suite

    task = {"id": "t1", "instruction": "open the app", "config": [
        {"type": "launch", "parameters": {"command": ["some-app-only-the-guest-has"]}},
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["https://example.org"]}}],
        "related_apps": ["some-app-only-the-guest-has"],
        "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": "echo hi"},
                      "expected": {"type": "rule", "rules": {"expected": "hi"}}}}
    (tmp_path / "t1.json").write_text(json.dumps(task))
    suite = load_suite(str(tmp_path))
    guest = plan_cases(suite, None, desktop="osworld")[0].reasons
    assert guest == ["setup step 2 type chrome_open_tabs is not implemented"] or (
        len(guest) == 1 and "chrome_open_tabs" in guest[0])


@pytest.mark.desktop
def test_the_local_provider_is_the_disposable_desktop_behind_the_seam(tmp_path) -> None:
    from PIL import Image

    need_desktop()
    home_cfg = ConwayConfig()
    with open_desktop(TasksConfig(), DesktopRequest("seam", size=(640, 400))) as desk:
        assert isinstance(desk, Desktop) and desk.provider == "local" and desk.size == (640, 400)
        desk.run_steps([{"type": "execute", "parameters": {"command": ["sh", "-c", "echo hello > ~/seam.txt"]}}],
                       StepLimits(window_wait_s=10, command_timeout_s=20))
        assert desk.task_env().host_path("~/seam.txt").read_text() == "hello\n"
        png = desk.screenshot()
        assert Image.open(io.BytesIO(png)).size == (640, 400)
        cfg = desk.task_config(home_cfg)
        assert cfg.tools.environment == "sandbox" and "browser" not in cfg.tools.enabled
        from conway.store.home import Home

        home = Home(tmp_path / "home")
        home.ensure_dirs()
        observer = desk.observer(cfg, home)
        try:
            assert observer.observe().captured_size == (640, 400)
        finally:
            observer.close()
        assert desk.lost() is None and desk.kept() is None
        root = Path(desk.desk.root)
    assert not root.exists()  # gone after the task
