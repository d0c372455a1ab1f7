"""OSWorld's `gotoRecreationPage_and_get_html_content` getter (chrome/b4f95342, "the next available dates for
Diamond"): what www.recreation.gov shows today for the campground, read live in the task's browser by the walk in
`recreation_walk.py` (run in the sandbox through `devtools.run_script`). The site's answer changes by the day, so
the expected value is read at evaluation time, never stored; the task needs the web (`tasks run --network`).

As OSWorld's: three attempts 5 s apart; when all fail, no raise but `{"expected": {"error": "__EVALUATION_FAILED__",
"error_message": …}}`, on which the task's `check_direct_json_object` scores 0. One difference, on purpose: at
OSWorld's b5007a93 the getter's step that clicks the search result sits after a `raise` in an `except` block,
so it never runs and every attempt fails at the next step (OSWorld scores the task 0 whatever the agent does);
the walk here takes that step, as the getter's own comments and log lines describe (docs/checks.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from conway.tasks.devtools import DevToolsError, run_script
from conway.tasks.env import TaskEnv

WALK = Path(__file__).with_name("recreation_walk.py")
HOMES = ("https://www.recreation.gov/", "http://www.recreation.gov/", "https://recreation.gov/")
"""The addresses OSWorld's getter tries, in its order."""
WAIT_SCALE = 1.0
"""OSWorld's fixed waits, unscaled (a test of the walk on a local copy of the site shortens them)."""
ATTEMPTS = 3
RETRY_S = 5.0
ATTEMPT_TIMEOUT_S = 420.0
"""One walk: OSWorld's fixed waits (about 50 s) and its element timeouts (up to 60 s each) on a slow site."""
FAILED = "__EVALUATION_FAILED__"


def gotoRecreationPage_and_get_html_content(env: TaskEnv, config: dict[str, Any], *,
                                            retry_s: float = RETRY_S) -> dict[str, Any]:
    error = ""
    for attempt in range(ATTEMPTS):
        try:
            request = {"config": config, "homes": list(HOMES), "wait_scale": WAIT_SCALE}
            return dict(run_script(env, WALK, request, ATTEMPT_TIMEOUT_S))
        except DevToolsError as exc:
            error = str(exc)
        if attempt < ATTEMPTS - 1:
            time.sleep(retry_s)
    return {"expected": {"error": FAILED, "error_message": f"Failed after {ATTEMPTS} attempts: {error}"}}


GETTERS = {"gotoRecreationPage_and_get_html_content": gotoRecreationPage_and_get_html_content}
