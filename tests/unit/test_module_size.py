"""No module of the package is over 700 lines: a longer one is split by concern (harbor/publish.py was:
what it reads and copies in publish_dataset.py, the adapter files in publish_adapter.py, the git
repository in publish_repository.py).  Excepted, as in tests/unit/test_game_knowledge.py: the
standalone agents (baselines/perception_agent.py, baselines/chance_agent.py), single scripts copied
whole into a sandbox that import nothing from the toolkit."""
from __future__ import annotations

from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "video_arena"
MAX_LINES = 700
STANDALONE_AGENTS = frozenset({PKG / "baselines" / "perception_agent.py", PKG / "baselines" / "chance_agent.py"})


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def oversized(pkg: Path, limit: int = MAX_LINES, excepted: frozenset[Path] = frozenset()) -> dict[str, int]:
    """module (relative to the package's parent) -> its line count, for every module over `limit`."""
    return {p.relative_to(pkg.parent).as_posix(): n for p in sorted(pkg.rglob("*.py"))
            if p not in excepted and (n := line_count(p)) > limit}


def test_no_module_of_the_package_is_over_700_lines():
    assert oversized(PKG, excepted=STANDALONE_AGENTS) == {}


def test_the_excepted_modules_are_the_standalone_agents():
    # each exception is a file that exists: a renamed agent leaves no stale exception behind
    assert all(p.is_file() for p in STANDALONE_AGENTS)


def test_the_size_check_can_fail(tmp_path):
    pkg = tmp_path / "video_arena"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "sub" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (pkg / "at_the_limit.py").write_text("x = 1\n" * MAX_LINES)
    (pkg / "agent.py").write_text("x = 1\n" * (MAX_LINES + 5))
    assert oversized(pkg, excepted=frozenset({pkg / "agent.py"})) == {"video_arena/sub/long.py": MAX_LINES + 1}
    assert oversized(pkg) == {"video_arena/agent.py": MAX_LINES + 5, "video_arena/sub/long.py": MAX_LINES + 1}
