"""Make the picture of `conway view` in docs/viewer.md from the recorded mock session (scripts/demos/view_session.py).

    .venv/bin/python -m scripts.demos.viewer_screenshot [--output docs/viewer.png]

Records the session into a temporary home (a real loop run, offline), writes
the static site with `conway view`, opens it in the system Chromium (headless,
through Playwright; nothing is downloaded) with step 3 selected and a wrong
label with a corrected point shown, and saves a 256-colour PNG.
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
import tempfile
from pathlib import Path

from conway.cli.main import main as conway
from scripts.demos.view_session import record_session

REPO = Path(__file__).resolve().parents[2]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default=str(REPO / "docs" / "viewer.png"))
    ap.add_argument("--width", type=int, default=1180)
    ap.add_argument("--height", type=int, default=760)
    args = ap.parse_args()
    chromium = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if chromium is None:
        sys.exit("Chromium is not installed (apt-get install chromium)")
    from PIL import Image
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        sid = record_session(home, title="Text Editor")
        site = Path(tmp) / "site"
        common = ["--home", str(home)]
        assert conway([*common, "review", "--step", "8", "--verdict", "wrong", "--note", "the file is higher up",
                       "--action", '{"type": "right_click", "x": 560, "y": 330}']) == 0
        assert conway([*common, "view", "--last", "--output", str(site)]) == 0
        url = (site / "s" / sid / "page-0001.html").as_uri() + "#s=8"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": args.width, "height": args.height})
            page.goto(url)
            page.evaluate("document.querySelector('section.summary details').open = false")
            page.evaluate("document.querySelector('#step-8').scrollIntoView({block: 'start'})")
            page.evaluate("window.scrollBy(0, -8)")
            png = page.screenshot()
            browser.close()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    img = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    img.save(out, optimize=True)
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
