"""video_arena/explore/cell_view.py: what the explorer reads from a cell folder it did not write."""
from __future__ import annotations

import os

from video_arena.explore import cell_view as C


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


def test_a_harbor_protocol_b_agents_run_json_is_not_shown_as_the_run_record(tmp_path):
    # Only a Protocol A trial's agent/run.json is the toolkit's record (the scorer reads it on the same
    # rule); any other agent wrote its agent/ folder itself.
    from types import SimpleNamespace

    (tmp_path / "t1" / "agent").mkdir(parents=True)
    (tmp_path / "t1" / "agent" / "run.json").write_text('{"audit": {"verdict": "clean"}}')
    system = SimpleNamespace(harbor={}, results=tmp_path)
    cell = SimpleNamespace(trial="t1", protocol="B", game="chess", case_id="x")
    assert C.cell_files(system, cell).run is None
    cell.protocol = "A"
    assert C.cell_files(system, cell).run == tmp_path / "t1" / "agent" / "run.json"
