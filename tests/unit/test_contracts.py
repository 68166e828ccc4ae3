"""One owner per contract: the names of every document the toolkit writes or reads are spelled in one
module, the rest import them; the judge (standalone, stdlib only) keeps its own copy, held equal here."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from video_arena.core import results as R
from video_arena.core import tasks as T
from video_arena.core.judge_loader import load_judge

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "video_arena"


def string_constants(path: Path) -> list[tuple[int, str]]:
    """(line, value) of every string literal of a Python file (a docstring or comment naming a file is
    prose; only a literal equal to the whole name counts where it is used)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def spelled_in(value: str, roots: tuple[Path, ...] = (PKG,)) -> list[str]:
    """The files (relative to the repo) that spell `value` as a whole string literal."""
    out = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if any(v == value for _, v in string_constants(path)):
                out.append(str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name)
    return out


# --------------------------------------------------------------------------------------------------
# the judge's copies
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("judge_name, owner_name", [
    ("GT_FORMAT", "GT_FORMAT"), ("ROOT_KEY", "ANSWER_ROOT_KEY"), ("ROW_FIELDS", "ROW_FIELDS"),
    ("DELTA_LABELS", "DELTA_LABELS"),
])
def test_the_judges_copy_of_the_answer_and_ground_truth_contract_is_the_owners(judge_name, owner_name):
    J = load_judge()
    assert getattr(J, judge_name) == getattr(T, owner_name)


def test_the_judge_copy_check_can_fail(tmp_path):
    # a judge whose copy drifted is found: the same comparison on a copy with another delta label
    text = (REPO / "judge" / "judge.py").read_text(encoding="utf-8")
    assert 'DELTA_LABELS = ("up", "down", "flat")' in text
    drifted = tmp_path / "judge.py"
    drifted.write_text(text.replace('DELTA_LABELS = ("up", "down", "flat")', 'DELTA_LABELS = ("up", "down", "same")'))
    assert load_judge(drifted).DELTA_LABELS != T.DELTA_LABELS


# --------------------------------------------------------------------------------------------------
# names spelled once
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("module, name", [
    ("video_arena/core/results.py", "RUN_FILE"),
    ("video_arena/core/results.py", "PROMPT_FILE"), ("video_arena/core/results.py", "REPLY_FILE"),
    ("video_arena/core/results.py", "REASONING_FILE"), ("video_arena/core/results.py", "RECEIPT_FILE"),
    ("video_arena/core/results.py", "RECEIPT_FORMAT"), ("video_arena/core/results.py", "RUN_FORMAT"),
    ("video_arena/core/tasks.py", "GT_FORMAT"),
])
def test_a_cell_or_ground_truth_name_is_spelled_only_by_its_owner(module, name):
    # (answer.json is not here: it is also the agent's side's file, the sandbox's and the Harbor task's)
    owner = REPO / module
    value = next(v for n, v in _assignments(owner).items() if n == name)
    others = [f for f in spelled_in(value) if f != module]
    assert others == [], f"{value!r} ({module} {name}) is spelled again in {others}: import it"


def _assignments(path: Path) -> dict[str, object]:
    """The module-level NAME = literal assignments of a file."""
    out = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return out


def test_spelled_in_finds_a_second_spelling(tmp_path):
    (tmp_path / "a.py").write_text('X = "reply.txt"\n"""reply.txt is prose"""\n')
    (tmp_path / "b.py").write_text('def f(d):\n    return d / "reply.txt"\n')
    (tmp_path / "c.py").write_text('# reply.txt\nY = "a reply.txt"\n')
    assert spelled_in("reply.txt", (tmp_path,)) == ["a.py", "b.py"]


def test_the_results_module_holds_the_run_record_not_general_file_io():
    # safe file I/O lives in video_arena/safe_io.py (the bottom layer); results.py reads and writes through it
    tree = ast.parse((PKG / "core" / "results.py").read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not imported & {"shutil", "tempfile", "io", "stat", "fcntl"}
    calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert not calls & {"write_text", "write_bytes", "read_text", "read_bytes", "unlink", "rmtree"}
    assert R.RUN_FORMAT == "video-arena-run/1"
