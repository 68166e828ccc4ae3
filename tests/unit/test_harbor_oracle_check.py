"""oracle-check's verdict on Harbor job folders (the trials themselves run in tests/e2e)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_the_runtime_table_drives_harbor_run(monkeypatch, tmp_path):
    """`harbor run` gets its runtime's arguments and environment from the table (container_host/runtimes.py),
    and oracle-check reads a runtime's form, side-by-side rule and probe from its row: a new row needs
    no branch."""
    import types

    from video_arena.container_host import runtimes as RT
    from video_arena.harbor import oracle_check as OC

    calls = []
    monkeypatch.setattr(OC, "harbor_executable", lambda: "harbor")
    monkeypatch.setattr(OC.subprocess, "run", lambda cmd, env=None, **kw: calls.append((cmd, env))
                        or types.SimpleNamespace(returncode=0))
    fake = RT.Runtime("fake", media_mode="copy", side_by_side=False, network_probe=True, harbor_args=("-e", "fake"),
                      harbor_env=lambda env: dict(env, FAKE="1"), prepare=lambda image: [f"fake: {image} ready"])
    monkeypatch.setitem(RT.RUNTIMES, "fake", fake)
    assert OC.run_harbor(tmp_path, "oracle", "j", tmp_path, tmp_path, env_type="docker") == 0
    assert OC.run_harbor(tmp_path, "oracle", "j", tmp_path, tmp_path, env_type="fake", extra=("-i", "t")) == 0
    (docker_cmd, docker_env), (fake_cmd, fake_env) = calls
    assert "-e" not in docker_cmd and "FAKE" not in docker_env
    assert fake_cmd[-4:] == ["-i", "t", "-e", "fake"] and fake_env["FAKE"] == "1"
    assert OC.side_by_side("fake", False) is False and OC.side_by_side("docker", False) is True
    assert (RT.RUNTIMES["docker"].media_mode, RT.RUNTIMES["podman"].media_mode) == ("mount", "copy")
    assert [n for n, r in RT.RUNTIMES.items() if r.network_probe] == ["podman", "fake"]


def test_render_media_renders_the_trials_videos_first_and_the_others_apart() -> None:
    """--render-media: the videos the trials need are one part (every game's first case at --limit 1), the
    rest another, together every listed case once; each part names only its own games and cases."""
    from video_arena import paths
    from video_arena.core.tasks import TasksTree

    root = paths.default_tasks_root()
    media = O.plan_media(None, "chess,go", 1)
    tree = TasksTree(root)
    assert media.trial == [(g, tree.listed_case_ids(g)[0]) for g in ("chess", "go")]
    assert sorted(media.trial + media.other) == sorted((g, c) for g in ("chess", "go") for c in tree.listed_case_ids(g))
    args = media.args(media.trial, True)
    assert args[:4] == ["--media-only", "--games", "chess,go", "--case-ids"]
    assert args[4].split(",") == [c for _, c in media.trial]
    assert O.plan_media(None, "chess", None).other == []  # --all: the trials need every video, nothing apart


def test_a_background_video_that_differs_fails_the_main_job(tmp_path, capsys) -> None:
    """The videos rendered while the trials run count as much as the others: a part that exits non-zero
    makes finish() report a problem, so oracle-check cannot pass."""
    import subprocess
    import sys

    media = O.MediaJob(None, [], [("chess", "AAAAAAAA")], log=tmp_path / "media.log")
    with open(media.log, "w") as fh:
        media.proc = subprocess.Popen([sys.executable, "-c", "print('chess: 1 media re-rendered; 0 match the manifest'); "
                                       "raise SystemExit(1)"], stdout=fh)
    assert media.finish() == 1
    out = capsys.readouterr()
    assert "0 match the manifest" in out.out and "differs from its manifest" in out.err
    ok = O.MediaJob(None, [], [], log=tmp_path / "none.log")
    assert ok.finish() == 0  # nothing was rendered apart


def test_the_runtime_flag_is_runtime_and_the_old_env_spelling_names_it(capsys):
    """One flag name for the container runtime (`video-arena image --runtime`): oracle-check's old `--env`
    is a one-line error naming the new flag, before anything runs."""
    assert O.main(["--env", "podman"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "oracle-check: --env is named --runtime now (--runtime podman)"
    with pytest.raises(SystemExit):
        O.main(["--help"])
    out = capsys.readouterr().out
    assert "--runtime {docker,podman}" in out and "--env" not in out
