"""One owner per contract: the names of every document the toolkit writes or reads are spelled in one
module, the rest import them; the judge (standalone, stdlib only) keeps its own copy, held equal here."""
from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path

import pytest

from video_arena.core import results as R
from video_arena.core import tasks as T
from video_arena.core.condition_fields import compare_lines, condition_of, mixing_lines
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
    ("video_arena/core/tasks.py", "GT_FORMAT"), ("video_arena/core/tasks.py", "GAME_VERSION_KEY"),
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


# --------------------------------------------------------------------------------------------------
# the game definition's version
# --------------------------------------------------------------------------------------------------
def _toml(version_line: str) -> str:
    text = (PKG / "games" / "chess" / "game.toml").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("version = ")]
    i = next(i for i, line in enumerate(lines) if line.startswith("name = "))
    return "\n".join(lines[:i + 1] + ([version_line] if version_line else []) + lines[i + 1:]) + "\n"


def test_every_game_toml_declares_its_version_and_a_missing_one_is_version_1():
    for path in sorted(PKG.glob("games/*/game.toml")):
        assert tomllib_loads(path)["version"] >= 1, path
    assert T.parse_game_toml(_toml("")).version == 1
    assert T.parse_game_toml(_toml("version = 3")).version == 3


@pytest.mark.parametrize("line", ['version = "2"', "version = 0", "version = 1.5", "version = true",
                                  "version = 10000001"])
def test_a_bad_game_version_is_one_clear_error(line):
    with pytest.raises(T.TasksTreeError, match="version must be an integer"):
        T.parse_game_toml(_toml(line))


def tomllib_loads(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_the_run_record_carries_the_game_version(tmp_path):
    doc = {"protocol": "A", "game": "chess", "case_id": "Fx7kQ2aB", "game_version": 2, "stop_reason": "stop"}
    R.write_run(tmp_path, doc)
    got, _ = R.read_run(tmp_path)
    assert got.game_version == 2 and "game_version" not in got.extras
    with pytest.raises(TypeError, match="game_version"):
        R.write_run(tmp_path, dict(doc, game_version="2"))
    for odd in ("2", 0, True, 10 ** 400):  # a reader takes an odd value as not recorded
        (tmp_path / "run.json").write_text(json.dumps(dict(doc, game_version=odd)))
        assert R.read_run(tmp_path)[0].game_version is None


class _Cell:
    def __init__(self, game, version, protocol="A"):
        self.game, self.protocol, self.instruction_sha256 = game, protocol, None
        self.condition = condition_of({"protocol": protocol, "game_version": version} if version else
                                      {"protocol": protocol})


def test_score_refuses_two_versions_of_one_game_never_two_games_of_different_versions():
    assert mixing_lines([_Cell("chess", 1), _Cell("go", 2), _Cell("go", 2)]) == []
    assert mixing_lines([_Cell("chess", 1), _Cell("chess", None)]) == []  # a record without it: not compared
    assert mixing_lines([_Cell("chess", 1), _Cell("chess", 2), _Cell("chess", 2, "B"), _Cell("go", 5)]) == [
        "game_version (chess): 2 (2 cells) vs 1 (1 cell)"]
    assert compare_lines([_Cell("chess", 1), _Cell("go", 1)], [_Cell("chess", 2), _Cell("sc2", 4)]) == [
        "game_version (chess): A has 1; B has 2"]
    assert compare_lines([_Cell("chess", 1)], [_Cell("go", 2)]) == []


# --------------------------------------------------------------------------------------------------
# docs/ARCHITECTURE.md "Contracts and their owners", held true
# --------------------------------------------------------------------------------------------------
FORMAT_RE = re.compile(r"\Avideo-arena-[a-z0-9-]+/\d+\Z")
FILE_RE = re.compile(r"\A[\w-]+\.(json|txt|toml|md|mp4)\Z")


def owners_table(text: str | None = None) -> list[dict]:
    """The rows of the table: contract, owner (a file of the repository), names, copies [(file, name)]."""
    text = text if text is not None else (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("### Contracts and their owners", 1)[1].split("\n### ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[1].startswith("`") or cells[0] == "contract":
            continue
        copies, where = [], None
        for tok in re.findall(r"`([^`]+)`", cells[3]):
            if tok.endswith(".py"):
                where = tok
            else:
                copies.append((where, tok))
        rows.append({"contract": cells[0], "owner": cells[1].strip("`"), "names": re.findall(r"`([^`]+)`", cells[2]),
                     "copies": copies})
    return rows


def defined_names(path: Path) -> dict[str, object]:
    """Module-level names of a file: a literal's value, or None for a class, function or other value."""
    out: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            out[node.name] = None
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    try:
                        out[t.id] = ast.literal_eval(node.value) if node.value is not None else None
                    except ValueError:
                        out[t.id] = None
    return out


def owners_problems(rows: list[dict], pkg: Path = PKG, repo: Path = REPO) -> list[str]:
    problems = []
    listed: dict[str, str] = {}  # a listed string value -> its owner
    for row in rows:
        owner = repo / row["owner"]
        if not owner.is_file():
            problems.append(f"{row['contract']}: owner {row['owner']} does not exist")
            continue
        names = defined_names(owner)
        for n in row["names"]:
            if n not in names:
                problems.append(f"{row['contract']}: {row['owner']} does not define {n}")
            elif isinstance(names[n], str):
                listed[names[n]] = row["owner"]
        for where, n in row["copies"]:
            own = [names.get(m) for m in row["names"] if names.get(m) is not None]
            copy = defined_names(repo / where).get(n)
            if copy is None or copy not in own:
                problems.append(f"{row['contract']}: {where} {n} = {copy!r} is not the owner's")
    for path in sorted(pkg.rglob("*.py")):
        rel = str(path.relative_to(repo))
        for line, value in string_constants(path):
            owner = listed.get(value)
            if owner is not None and owner != rel and (FORMAT_RE.match(value) or FILE_RE.match(value)):
                problems.append(f"{rel}:{line} spells {value!r}, which {owner} owns: import it")
            elif owner is None and FORMAT_RE.match(value):
                problems.append(f"{rel}:{line} spells the format {value!r}, which no listed owner defines")
    return problems


def test_each_contract_has_the_one_owner_docs_architecture_names():
    rows = owners_table()
    assert len(rows) >= 15 and {r["owner"] for r in rows} >= {"video_arena/core/tasks.py", "video_arena/core/results.py"}
    assert owners_problems(rows) == []


def test_the_owners_check_can_fail(tmp_path):
    pkg = tmp_path / "video_arena"
    (pkg / "core").mkdir(parents=True)
    (pkg / "core" / "own.py").write_text('FORMAT = "video-arena-thing/1"\nFILE = "thing.json"\nclass Thing: pass\n')
    (pkg / "other.py").write_text('X = "video-arena-thing/1"\nY = "video-arena-stray/2"\nZ = "thing.json"\n')
    (tmp_path / "copy.py").write_text('FORMAT = "video-arena-thing/2"\n')
    doc = ("### Contracts and their owners\n| contract | owner | names | copies |\n|---|---|---|---|\n"
           "| thing | `video_arena/core/own.py` | `FORMAT`, `FILE`, `Thing`, `Missing` | `copy.py` `FORMAT` |\n"
           "| gone | `video_arena/core/gone.py` | `X` | |\n")
    rows = owners_table(doc)
    assert rows[0]["copies"] == [("copy.py", "FORMAT")]
    assert owners_problems(rows, pkg, tmp_path) == [
        "thing: video_arena/core/own.py does not define Missing",
        "thing: copy.py FORMAT = 'video-arena-thing/2' is not the owner's",
        "gone: owner video_arena/core/gone.py does not exist",
        "video_arena/other.py:1 spells 'video-arena-thing/1', which video_arena/core/own.py owns: import it",
        "video_arena/other.py:2 spells the format 'video-arena-stray/2', which no listed owner defines",
        "video_arena/other.py:3 spells 'thing.json', which video_arena/core/own.py owns: import it",
    ]
