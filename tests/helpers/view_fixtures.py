"""Fixtures for the viewer's tests: the recorded session (scripts/demos/view_session.py), made once, copied per test.

Import them into a test module (``from view_fixtures import recorded, session``).
"""

from __future__ import annotations

import shutil

import pytest

from scripts.demos.view_session import record_session


@pytest.fixture(scope="session")
def recorded(tmp_path_factory):
    """(home folder, session id) of the session, recorded once per test run."""
    root = tmp_path_factory.mktemp("view-template") / "home"
    return root, record_session(root)


@pytest.fixture
def session(recorded, conway_home) -> str:
    """The recorded session copied into this test's own home; returns its id."""
    root, sid = recorded
    shutil.copytree(root, conway_home)
    return sid
