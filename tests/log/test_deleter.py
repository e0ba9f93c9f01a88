"""Partition deletion off the caller's thread (`log.deleter`): the directory is renamed at once and
removed in the background; a name can be reused at once; a rename left by a crash or a stop is
finished at the next start."""

from __future__ import annotations

import os
import threading

from loghelpers import T0, batch_of

from tidelog.log import deleter as deleter_mod
from tidelog.log.config import LogConfig
from tidelog.log.deleter import DELETE_SUFFIX, DirDeleter
from tidelog.log.manager import LogManager

CFG = LogConfig()


def _names(d):
    return sorted(os.listdir(d))


def test_delete_renames_at_once_and_removes_in_the_background(tmp_path, monkeypatch):
    m = LogManager([tmp_path], CFG, clock_ms=lambda: T0)
    log = m.get_or_create("gone", 0)
    log.append(batch_of(3, T0))
    release = threading.Event()
    real_rmtree = deleter_mod.shutil.rmtree

    def slow_rmtree(path, *a, **kw):  # the deleter's removal waits until the test lets it go
        assert threading.current_thread().name == "tidelog-deleter"
        release.wait(10)
        real_rmtree(path, *a, **kw)

    monkeypatch.setattr(deleter_mod.shutil, "rmtree", slow_rmtree)
    assert m.delete("gone", 0)
    # the caller did not wait: the directory is renamed, its files still there
    (renamed,) = [n for n in _names(tmp_path) if n.endswith(DELETE_SUFFIX)]
    assert renamed.startswith("gone-0.") and not (tmp_path / "gone-0").exists()
    assert os.listdir(tmp_path / renamed)
    # the same partition can be created again meanwhile, empty
    again = m.get_or_create("gone", 0)
    assert again.log_end_offset == 0 and (tmp_path / "gone-0").is_dir()
    release.set()
    assert m.deleter.wait_idle(10)
    assert not (tmp_path / renamed).exists() and (tmp_path / "gone-0").is_dir()
    m.close()


def test_a_rename_left_by_a_stop_is_finished_at_the_next_start(tmp_path, monkeypatch):
    m = LogManager([tmp_path], CFG, clock_ms=lambda: T0)
    m.get_or_create("kept", 0).append(batch_of(2, T0))
    m.get_or_create("gone", 1).append(batch_of(2, T0))
    monkeypatch.setattr(DirDeleter, "schedule", lambda self, path: None)  # stopped before removing
    m.delete_topic("gone")
    m.close()
    monkeypatch.undo()
    left = [n for n in _names(tmp_path) if n.endswith(DELETE_SUFFIX)]
    assert len(left) == 1 and left[0].startswith("gone-1.")
    m2 = LogManager([tmp_path], CFG, clock_ms=lambda: T0)
    assert m2.get("gone", 1) is None  # never opened as a partition
    assert m2.get("kept", 0).log_end_offset == 2
    assert m2.deleter.wait_idle(10)
    assert not any(n.endswith(DELETE_SUFFIX) for n in _names(tmp_path))
    m2.close()


def test_a_stopped_deleter_takes_no_more(tmp_path):
    d = DirDeleter()
    a, b = tmp_path / "a-0.x-delete", tmp_path / "b-0.y-delete"
    a.mkdir()
    b.mkdir()
    d.schedule(a)
    assert d.wait_idle(10) and not a.exists()
    d.stop()
    d.schedule(b)
    assert d.wait_idle(1) and b.exists()  # left for the next start
