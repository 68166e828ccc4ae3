"""video_arena/explore/cells.py: what the explorer reads from a cell folder it did not write."""
from __future__ import annotations

import os

from video_arena.explore import cells as C


def test_a_log_tail_never_follows_a_symlink_nor_blocks_on_a_fifo(tmp_path):
    # A Harbor agent writes its own agent/ folder: a `notes.txt` symlink to a host file must not put
    # that file's tail into a site meant to be shared; a FIFO must not hang the build.
    secret = tmp_path / "host-secret"
    secret.write_text("-----BEGIN PRIVATE KEY----- do not publish")
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "notes.txt").symlink_to(secret)
    os.mkfifo(agent / "pipe.log")
    assert C.text_tail(agent / "notes.txt") == (None, False)
    assert C.text_tail(agent / "pipe.log") == (None, False)
    (agent / "agent.log").write_text("x" * 10 + "tail")
    assert C.text_tail(agent / "agent.log", 4) == ("tail", True)
    assert C.text_tail(agent / "agent.log") == ("x" * 10 + "tail", False)
