"""`fsync_dir`: one documented error behaviour, and a best-effort mode for the callers that want it."""

from __future__ import annotations

import os

import pytest

from conway.store.durable import fsync_dir


def test_a_folder_is_synced(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    fsync_dir(tmp_path)
    assert len(synced) == 1


def test_a_failing_sync_is_raised_unless_best_effort(tmp_path, monkeypatch):
    def broken(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError):
        fsync_dir(tmp_path)
    fsync_dir(tmp_path, best_effort=True)


def test_a_folder_that_cannot_be_opened_is_raised_unless_best_effort(tmp_path):
    missing = tmp_path / "gone"
    with pytest.raises(OSError):
        fsync_dir(missing)
    fsync_dir(missing, best_effort=True)
