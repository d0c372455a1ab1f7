"""Grounding suites: which applications to start and how their targets become instructions.

A suite is a YAML file (``format: conway-grounding-suite/1``); paths in it are
relative to the file. See ``evals/grounding/README.md`` for how to write one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from conway.config import yaml_error_line
from conway.errors import UserError

SUITE_FORMAT = "conway-grounding-suite/1"

CLICKABLE_ROLES = ("push button", "toggle button", "check box", "radio button", "menu", "menu item",
                   "check menu item", "radio menu item", "combo box", "page tab", "text", "entry", "password text",
                   "spin button", "link", "list item", "table cell", "icon", "slider", "tree item")
"""Accessible roles a click targets (AT-SPI role names); labels, panels and frames are never targets."""

TEMPLATES: dict[str, str] = {
    "push button": "Click the '{name}' button.",
    "toggle button": "Click the '{name}' toggle button.",
    "check box": "Click the '{name}' check box.",
    "radio button": "Select the '{name}' option.",
    "menu": "Open the '{name}' menu.",
    "menu item": "Click the '{name}' menu item.",
    "check menu item": "Click the '{name}' menu item.",
    "radio menu item": "Click the '{name}' menu item.",
    "combo box": "Open the '{name}' drop-down list.",
    "page tab": "Click the '{name}' tab.",
    "text": "Click the '{name}' text field.",
    "entry": "Click the '{name}' text field.",
    "password text": "Click the '{name}' password field.",
    "spin button": "Click the '{name}' number field.",
    "link": "Click the '{name}' link.",
    "list item": "Click '{name}' in the list.",
    "table cell": "Click '{name}' in the table.",
    "tree item": "Click '{name}' in the tree.",
    "icon": "Click the '{name}' icon.",
    "slider": "Click the '{name}' slider.",
}
"""Instruction per role; ``{name}`` is the accessible name. A suite may replace any of them."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SuiteApp(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    """Short name: the screen's name in the report and its screenshot's file name."""
    command: list[str] = Field(min_length=1)
    """Program and arguments; ``{python}`` is Conway's Python, ``{suite_dir}`` the suite's folder."""
    targets: Literal["atspi", "app-report"] = "atspi"
    """atspi: read the accessibility tree; app-report: the app writes its widgets to $CONWAY_GROUNDING_TARGETS
    (for toolkits without an accessibility bridge, such as Tk 8.6 on Linux)."""
    env: dict[str, str] = {}
    """Extra environment variables for the app."""
    settle_s: float | None = Field(default=None, ge=0, le=60)
    """Wait this long after the app's targets first appear (None: the suite's settle_s)."""
    start_timeout_s: float = Field(default=30.0, gt=0, le=600)
    """Give up when no target appears within this time."""
    instructions: dict[str, str] = {}
    """Instruction overrides keyed ``role:name`` or ``name``, e.g. ``"push button:Save": "Save the file."``."""


class AppSuite(_Strict):
    format: Literal["conway-grounding-suite/1"]
    name: str
    """Suite name (recorded in reports)."""
    description: str = ""
    per_screen: int = Field(default=12, ge=1, le=500)
    """Targets kept per screen (seeded, roles balanced)."""
    settle_s: float = Field(default=1.0, ge=0, le=60)
    """Wait after the targets first appear, then require two identical harvests before the screenshot."""
    roles: list[str] = list(CLICKABLE_ROLES)
    """Roles that count as click targets."""
    templates: dict[str, str] = {}
    """Instruction templates per role, merged over the defaults."""
    min_size_px: int = Field(default=4, ge=1)
    """Targets smaller than this on either side (in screenshot pixels) are left out."""
    apps: list[SuiteApp] = Field(min_length=1)


def load_suite(path: str) -> tuple[AppSuite, Path]:
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(f"grounding suite {p} does not exist" + (" (it is a folder)" if p.is_dir() else ""))
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise UserError(f"grounding suite {p} is not valid YAML: {yaml_error_line(exc)}") from None
    if not isinstance(data, dict) or data.get("format") != SUITE_FORMAT:
        raise UserError(f"{p} is not a grounding suite (expected format: {SUITE_FORMAT})")
    try:
        suite = AppSuite.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise UserError(f"grounding suite {p}: {where}: {first['msg']}") from None
    names = [a.name for a in suite.apps]
    if len(set(names)) != len(names):
        raise UserError(f"grounding suite {p}: app names must be unique")
    return suite, p.resolve().parent


def app_command(app: SuiteApp, suite_dir: Path) -> list[str]:
    return [part.replace("{python}", sys.executable).replace("{suite_dir}", str(suite_dir)) for part in app.command]


def instruction_for(role: str, name: str, suite: AppSuite, app: SuiteApp | None) -> str:
    if app is not None:
        for key in (f"{role}:{name}", name):
            if key in app.instructions:
                return app.instructions[key]
    template = {**TEMPLATES, **suite.templates}.get(role, "Click '{name}'.")
    return template.replace("{name}", " ".join(name.split()))
