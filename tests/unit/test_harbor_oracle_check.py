"""oracle-check's verdict on Harbor job folders (the trials themselves run in tests/e2e)."""
from __future__ import annotations

import json
from pathlib import Path

from video_arena.harbor import oracle_check as O

ONES = {"reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}
ZEROS = {k: 0.0 for k in ONES}


def trial(job: Path, name: str, rewards=None, exception=None, exit_code=None, state=None) -> None:
    d = job / name
    (d / "agent").mkdir(parents=True)
    (d / "verifier").mkdir()
    res = {"task_name": f"video-arena/{name}", "verifier_result": {"rewards": rewards} if rewards is not None else None,
           "exception_info": {"exception_type": exception, "exception_message": "boom"} if exception else None}
    (d / "result.json").write_text(json.dumps(res))
    if exit_code is not None:
        (d / "agent" / "exit-code.txt").write_text(str(exit_code))
    if state is not None:
        (d / "verifier" / "judge.json").write_text(json.dumps({"answer_state": state}))


def test_good_oracle_and_nop_pass(tmp_path):
    trial(tmp_path / "o", "chess-AAAAAAAA", ONES, state="wrote")
    trial(tmp_path / "n", "chess-AAAAAAAA", ZEROS, state="never_wrote")
    assert all(t.ok for t in O.read_trials(tmp_path / "o", "oracle", "B"))
    assert all(t.ok for t in O.read_trials(tmp_path / "n", "nop", "B"))


def test_each_failure_is_reported(tmp_path):
    job = tmp_path / "o"
    trial(job, "chess-AAAAAAAA", dict(ONES, t3_macro_acc=0.5), state="wrote")
    trial(job, "chess-BBBBBBBB", ONES, exit_code=3, state="wrote")
    trial(job, "chess-CCCCCCCC", None, exception="RuntimeError")
    by = {t.trial: t for t in O.read_trials(job, "oracle", "B")}
    assert "t3_macro_acc=0.5, expected 1.0" in by["chess-AAAAAAAA"].problems
    assert any("solve.sh exited 3" in p for p in by["chess-BBBBBBBB"].problems)
    assert any("exception RuntimeError" in p for p in by["chess-CCCCCCCC"].problems)
    assert any("no reward" in p for p in by["chess-CCCCCCCC"].problems)


def test_nop_must_see_the_seed(tmp_path):
    trial(tmp_path / "n", "chess-AAAAAAAA", ZEROS, state="missing")
    (t,) = O.read_trials(tmp_path / "n", "nop", "A")
    assert not t.ok and "the answer seed did not reach /app/answer.json" in t.problems[0]


def test_cpu_override_only_on_small_hosts(monkeypatch):
    monkeypatch.setattr(O.os, "cpu_count", lambda: 2)
    assert O.resource_args() == ["--override-cpus", "2"]
    monkeypatch.setattr(O.os, "cpu_count", lambda: 16)
    assert O.resource_args() == []


def test_podman_jobs_run_one_after_another_docker_side_by_side():
    from video_arena.harbor import oracle_check as OC

    assert OC.side_by_side("docker", False) is True
    assert OC.side_by_side("docker", True) is False
    assert OC.side_by_side("podman", False) is False
