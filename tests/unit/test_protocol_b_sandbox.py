"""Protocol B sandbox, agent environment, command template, answer states and preflight."""
from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.core import instruction_for, resolve, text_digest
from video_arena.games.cli import ANSWER_SEED_BYTES
from video_arena.protocol_b.preflight import PY_MODULES, run_preflight
from video_arena.core.prompts import turn1_prompt
from video_arena.core.results import redact
from video_arena.protocol_b.agent_cell import TemplateError, fill_template
from video_arena.protocol_b.sandbox import (CELL_MARKER_ENV, SandboxError, agent_environment,
                                            check_sandbox_root, create_sandbox, forbidden_roots)
from video_arena.protocol_b.states import MAX_ANSWER_BYTES, collect_answer, count_rows

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "protocol_b" / "tasks"
CASE = "Tq3Vx8Lm"


def _make(tmp_path: Path, **kw):
    r = resolve("toy", CASE, TASKS)
    base = check_sandbox_root(tmp_path / "sb", forbidden_roots(TASKS))
    return r, create_sandbox(base, media=r["media"], instruction_text=instruction_for("agentic", r["instruction"]),
                             seed_bytes=Path(r["answer_seed"]).read_bytes(),
                             prompt_for=lambda w: turn1_prompt(w, 200, 120), marker="m:1", **kw)


def test_sandbox_holds_exactly_three_files_and_prompt_beside_it(tmp_path: Path) -> None:
    r, sb = _make(tmp_path)
    assert sorted(os.listdir(sb.path)) == ["answer.json", "instruction.md", "match.mp4"]
    assert (sb.path / "answer.json").read_bytes() == Path(r["answer_seed"]).read_bytes() == ANSWER_SEED_BYTES
    assert (sb.path / "match.mp4").read_bytes() == Path(r["media"]).read_bytes()
    assert not (sb.path / "match.mp4").is_symlink() and os.stat(sb.path / "match.mp4").st_nlink == 1
    delivered = (sb.path / "instruction.md").read_text(encoding="utf-8")
    assert delivered == instruction_for("agentic", r["instruction"])
    assert "A-ONLY" not in delivered and "<!--" not in delivered and "agentic sandbox" in delivered
    assert sb.prompt_path.parent == sb.path.parent and sb.prompt_path.name == "prompt.txt"
    assert sorted(os.listdir(sb.container)) == sorted(["prompt.txt", sb.path.name])
    assert str(sb.path) in sb.prompt_path.read_text()
    assert sb.instruction_sha256 == text_digest(delivered)
    assert sb.prompt_sha256 == text_digest(sb.prompt_path.read_text(encoding="utf-8"))
    for part in (CASE, "toy"):
        assert part not in str(sb.path)
    sb.remove()
    assert not sb.container.exists()


def test_sandboxes_are_never_reused(tmp_path: Path) -> None:
    _, a = _make(tmp_path)
    _, b = _make(tmp_path)
    assert a.path != b.path and a.container != b.container


def test_hardlink_media_when_asked(tmp_path: Path) -> None:
    r, sb = _make(tmp_path, hardlink_media=True)
    assert os.path.samefile(sb.path / "match.mp4", r["media"])


def test_missing_media_is_an_error_and_leaves_nothing(tmp_path: Path) -> None:
    base = check_sandbox_root(tmp_path / "sb", forbidden_roots(TASKS))
    with pytest.raises(SandboxError, match="media"):
        create_sandbox(base, media=tmp_path / "nope.mp4", instruction_text="x", seed_bytes=b"{}",
                       prompt_for=lambda w: "p", marker="m")
    assert os.listdir(base) == []


@pytest.mark.parametrize("where", ["repo", "repo_sub", "tasks", "tasks_gt", "media"])
def test_sandbox_root_inside_repo_or_tasks_or_media_is_refused(tmp_path: Path, where: str) -> None:
    media = tmp_path / "media"
    media.mkdir()
    root = {"repo": paths.REPO_ROOT, "repo_sub": paths.REPO_ROOT / "build" / "sandboxes",
            "tasks": TASKS, "tasks_gt": TASKS / "toy" / "gt", "media": media / "x"}[where]
    existed = root.exists()
    with pytest.raises(SandboxError, match="inside"):
        check_sandbox_root(root, forbidden_roots(TASKS, media))
    assert root.exists() == existed  # refused before anything was created


def test_default_sandbox_root_is_the_system_temp_dir() -> None:
    import tempfile
    assert check_sandbox_root(None, forbidden_roots(TASKS)) == Path(tempfile.gettempdir()).resolve()


def test_agent_environment_scrubs_paths_back_to_the_trees(tmp_path: Path) -> None:
    repo = str(paths.REPO_ROOT)
    base = {
        "PATH": os.pathsep.join([f"{repo}/.venv/bin", "/usr/local/bin", "/usr/bin"]),
        "PYTHONPATH": repo,
        "VIRTUAL_ENV": f"{repo}/.venv",
        paths.TASKS_ROOT_ENV: str(TASKS), paths.MEDIA_ROOT_ENV: "/srv/media",
        "PWD": repo, "OLDPWD": "/somewhere", "HOME": "/home/u", "LANG": "C.UTF-8",
        "SOME_TOKEN": "abc", CELL_MARKER_ENV: "stale",
    }
    env, changed = agent_environment(base, forbidden_roots(TASKS), tmp_path, "run:cell")
    assert env["PATH"].split(os.pathsep) == ["/usr/local/bin", "/usr/bin"]
    for k in ("PYTHONPATH", "VIRTUAL_ENV", paths.TASKS_ROOT_ENV, paths.MEDIA_ROOT_ENV, "OLDPWD"):
        assert k not in env
    assert env["PWD"] == str(tmp_path) and env[CELL_MARKER_ENV] == "run:cell"
    assert env["HOME"] == "/home/u" and env["LANG"] == "C.UTF-8" and env["SOME_TOKEN"] == "abc"
    assert not any(repo in v for v in env.values())
    assert {"PATH", "PYTHONPATH", "VIRTUAL_ENV", paths.TASKS_ROOT_ENV, paths.MEDIA_ROOT_ENV} <= set(changed)


def test_fill_template() -> None:
    vals = {"sandbox": "/tmp/a b/s", "prompt": "/tmp/a b/prompt.txt", "max_turns": "200"}
    cmd = fill_template("agent --cwd {sandbox} -p \"$(cat {prompt})\" --max-turns {max_turns} "
                        "--json '{\"k\": 1}' --home ${HOME}", vals)
    assert cmd == ("agent --cwd '/tmp/a b/s' -p \"$(cat '/tmp/a b/prompt.txt')\" --max-turns 200 "
                   "--json '{\"k\": 1}' --home ${HOME}")
    with pytest.raises(TemplateError, match="sandbx"):
        fill_template("agent {sandbx}", vals)
    with pytest.raises(TemplateError):
        fill_template("   ", vals)


def test_redact_masks_secrets_in_recorded_commands() -> None:
    assert redact("OPENAI_API_KEY=sk-123 agent --token abc") == "OPENAI_API_KEY=*** agent --token abc"
    assert "s3cr3t" not in redact("env ANTHROPIC_AUTH_TOKEN=s3cr3t claude -p x")


# -- answer states ------------------------------------------------------------------------------

def test_answer_states_by_digest(tmp_path: Path) -> None:
    seed = ANSWER_SEED_BYTES
    p = tmp_path / "answer.json"
    p.write_bytes(seed)
    c = collect_answer(p, seed)
    assert (c.state, c.export) == ("never_wrote", seed)
    p.write_bytes(b'{"events":[]}')  # same content, different bytes: the agent did write
    c = collect_answer(p, seed)
    assert c.state == "wrote" and c.export == b'{"events":[]}' and count_rows(c.export) == 0
    p.write_bytes(b'{"events": [{"t": 1}, {"t": 2}]}')
    c = collect_answer(p, seed)
    assert c.state == "wrote" and count_rows(c.export) == 2
    p.write_bytes(b"not json")
    c = collect_answer(p, seed)
    assert c.state == "wrote" and count_rows(c.export) == 0
    p.unlink()
    c = collect_answer(p, seed)
    assert (c.state, c.export) == ("deleted", seed)


def test_symlink_or_folder_answer_counts_as_deleted(tmp_path: Path) -> None:
    seed = ANSWER_SEED_BYTES
    target = tmp_path / "elsewhere.json"
    target.write_bytes(b'{"events": [{"t": 1}]}')
    p = tmp_path / "answer.json"
    p.symlink_to(target)
    c = collect_answer(p, seed)
    assert c.state == "deleted" and c.export == seed and "symlink" in c.note and c.answer_sha256 == ""
    p.unlink()
    p.mkdir()
    c = collect_answer(p, seed)
    assert c.state == "deleted" and "regular" in c.note
    p.rmdir()
    os.mkfifo(p)  # a FIFO nobody writes to: never blocks the runner
    c = collect_answer(p, seed)
    assert c.state == "deleted" and "regular" in c.note


def test_answer_over_the_judges_cap_is_too_large_and_read_bounded(tmp_path: Path) -> None:
    seed = ANSWER_SEED_BYTES
    p = tmp_path / "answer.json"
    with open(p, "wb") as f:
        f.truncate(1 << 40)  # 1 TiB, sparse: read whole it would exhaust any machine
    c = collect_answer(p, seed)
    assert (c.state, c.export, c.answer_sha256) == ("too_large", seed, "") and "cap" in c.note
    with open(p, "r+b") as f:
        f.truncate(MAX_ANSWER_BYTES)  # exactly the cap is still judged
    assert collect_answer(p, seed).state == "wrote"


def test_cap_is_the_judges() -> None:
    judge_text = (paths.REPO_ROOT / "judge" / "judge.py").read_text(encoding="utf-8")
    m = re.search(r"^MAX_ANSWER_BYTES = (.+)$", judge_text, re.M)
    assert m and eval(m.group(1), {}) == MAX_ANSWER_BYTES  # noqa: S307 - a constant expression of ours


def test_count_rows_shapes() -> None:
    assert count_rows(b'{"events": [1, 2, 3]}') == 3
    assert count_rows(b'{"rows": [1]}') == 0
    assert count_rows(b'[1, 2]') == 0
    assert count_rows(b'\xff\xfe') == 0


# -- preflight ----------------------------------------------------------------------------------

def _bin(tmp_path: Path, tools: dict[str, str]) -> str:
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    for name, target in tools.items():
        p = d / name
        if target.startswith("#!"):
            p.write_text(target)
            p.chmod(0o755)
        else:
            p.symlink_to(target)
    return str(d)


def test_preflight_missing_ffmpeg_ffprobe_is_an_error(tmp_path: Path) -> None:
    path = _bin(tmp_path, {"python3": sys.executable})
    pf = run_preflight({"PATH": path})
    assert not pf.ok
    assert "ffmpeg" in pf.errors[0] and "ffprobe" in pf.errors[0] and "python3" not in pf.errors[0].split(".")[0]
    assert any("tesseract" in w for w in pf.warnings)


def test_preflight_missing_python3_is_an_error(tmp_path: Path) -> None:
    ffmpeg, ffprobe = shutil.which("ffmpeg"), shutil.which("ffprobe")
    if not (ffmpeg and ffprobe):
        pytest.skip("ffmpeg/ffprobe not installed")
    pf = run_preflight({"PATH": _bin(tmp_path, {"ffmpeg": ffmpeg, "ffprobe": ffprobe})})
    assert not pf.ok and "python3" in pf.errors[0]


def test_preflight_missing_modules_only_warn(tmp_path: Path) -> None:
    ffmpeg, ffprobe = shutil.which("ffmpeg"), shutil.which("ffprobe")
    if not (ffmpeg and ffprobe):
        pytest.skip("ffmpeg/ffprobe not installed")
    # A python3 that sees no site-packages: every third-party module is missing.
    wrapper = f"#!/bin/sh\nexec {sys.executable} -I -S \"$@\"\n"
    pf = run_preflight({"PATH": _bin(tmp_path, {"ffmpeg": ffmpeg, "ffprobe": ffprobe, "python3": wrapper})})
    assert pf.ok, pf.errors
    assert set(pf.missing_modules) == set(PY_MODULES)
    assert any("numpy" in w for w in pf.warnings)
