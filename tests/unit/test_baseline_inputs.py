"""A baseline cell's inputs digest covers all the code that made it: for the Protocol A systems, run-a's
own prompt, grid and engine (video_arena/protocol_a/ and every package module the runner imports)."""
from __future__ import annotations

import shutil
from pathlib import Path

from video_arena.baselines import cell_inputs as CI
from video_arena.baselines import run as BR
from video_arena.paths import REPO_ROOT

PKG = REPO_ROOT / "video_arena"


def _copy_sources(tmp_path: Path) -> Path:
    dest = tmp_path / "video_arena"
    for src in PKG.rglob("*.py"):
        out = dest / src.relative_to(PKG)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out)
    return dest


def test_run_a_sources_are_its_engine_prompt_grid_and_what_they_import():
    got = {str(p.relative_to(PKG)) for p in CI.module_sources("video_arena.protocol_a.runner")}
    assert {"protocol_a/runner.py", "protocol_a/request_cell.py", "protocol_a/engine.py", "protocol_a/server_limits.py",
            "core/prompts.py", "core/answers.py", "core/request.py", "core/condition.py", "media/grid.py",
            "core/results.py"} <= got
    # what run-a never runs is not an input: the scorer, the Harbor agent, the games
    assert not {p for p in got if p.startswith(("scoring/", "harbor", "games/", "baselines/"))}
    assert "protocol_a/harbor_agent.py" not in got


def test_a_change_to_run_as_code_changes_the_protocol_a_systems_digest(tmp_path, monkeypatch):
    pkg = _copy_sources(tmp_path)
    real = CI.module_sources
    monkeypatch.setattr(CI, "module_sources", lambda module: real(module, pkg))
    cmds = {"perception-b": "p", "chance-b": "c", "majority-b": "m"}

    def digests() -> dict[str, str]:
        return BR.system_inputs(cmds, 0, {"Chess": 1.0})

    before = digests()
    for rel in ("protocol_a/engine.py", "core/prompts.py", "media/grid.py", "protocol_a/request_cell.py"):
        path = pkg / rel
        path.write_text(path.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
        after = digests()
        assert after["chance-a"] != before["chance-a"] and after["majority-a"] != before["majority-a"], rel
        assert after["chance-b"] == before["chance-b"] and after["oracle"] == before["oracle"], rel
        before = after
    # a module run-a never imports is no input of it
    (pkg / "scoring" / "report.py").write_text("# changed\n", encoding="utf-8")
    assert digests() == before
