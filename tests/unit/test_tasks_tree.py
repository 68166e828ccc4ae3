"""The tasks tree's one owner (video_arena/core/tasks.py `TasksTree`): where gt/, media/, cases.json and
the manifests are, bounded reads, the manifest writer; and no other module spells the layout."""
from __future__ import annotations

import ast
import json
import os
import threading
from pathlib import Path

import pytest

from video_arena.core import tasks as T

PKG = Path(__file__).resolve().parents[2] / "video_arena"


def test_paths_of_listed_and_unlisted_cases(tmp_path):
    tree = T.TasksTree(tmp_path / "tasks", tmp_path / "media")
    assert tree.gt("chess", "Fx7kQ2aB") == tmp_path / "tasks" / "chess" / "gt" / "Fx7kQ2aB.json"
    assert tree.media("chess", "Fx7kQ2aB") == tmp_path / "media" / "chess" / "media" / "Fx7kQ2aB.mp4"
    assert tree.manifest_path("go") == tmp_path / "tasks" / "go" / "manifest.json"
    assert tree.cases_path("go") == tmp_path / "tasks" / "go" / "cases.json"
    assert T.TasksTree(tmp_path).media("go", "x") == tmp_path / T.media_rel("go", "x") == tmp_path / "go/media/x.mp4"
    assert T.gt_rel("go", "x") == "go/gt/x.json"
    assert tree.gt_files("chess") == [] and tree.listed_case_ids("chess") == [] and tree.read_manifest("chess") is None


def test_at_resolves_the_media_root(tmp_path, monkeypatch):
    (tmp_path / "t").mkdir()
    monkeypatch.delenv("VA_MEDIA_ROOT", raising=False)
    assert T.TasksTree.at(tmp_path / "t") == T.TasksTree(tmp_path / "t")
    monkeypatch.setenv("VA_MEDIA_ROOT", str(tmp_path / "m"))
    assert T.TasksTree.at(tmp_path / "t").media_root == (tmp_path / "m").resolve()


def _manifest(game: str, cases: list) -> dict:
    return {"format": T.MANIFEST_FORMAT, "game": game, "n_cases": len(cases), "cases": cases}


def test_manifest_round_trip_is_stable_bytes(tmp_path):
    tree = T.TasksTree(tmp_path)
    doc = _manifest("chess", [{"case_id": "Fx7kQ2aB", "gt_sha256": "a" * 64, "source": {"name": "é"}}])
    assert tree.write_manifest("chess", doc) is True
    assert tree.write_manifest("chess", doc) is False  # the same bytes: not rewritten
    raw = tree.manifest_path("chess").read_bytes()
    assert raw == (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode() == T.tree_json(doc)
    assert tree.read_manifest("chess") == doc and tree.manifest_cases("chess") == {"Fx7kQ2aB": doc["cases"][0]}


@pytest.mark.parametrize("bad", [
    {"format": "other", "game": "chess", "n_cases": 0, "cases": []},
    {"format": T.MANIFEST_FORMAT, "game": "go", "n_cases": 0, "cases": []},
    {"format": T.MANIFEST_FORMAT, "game": "chess", "n_cases": 2, "cases": [{"case_id": "a"}]},
    {"format": T.MANIFEST_FORMAT, "game": "chess", "cases": "abc"},
])
def test_write_manifest_refuses_what_is_not_the_games_manifest(tmp_path, bad):
    with pytest.raises(T.TasksTreeError):
        T.TasksTree(tmp_path).write_manifest("chess", bad)
    assert not (tmp_path / "chess" / "manifest.json").exists()


@pytest.mark.parametrize("content", [b"[\"x\"]", b'{"cases": "abc"}', b'{"cases": ["x"]}', b"{", b"\xff"])
def test_a_malformed_manifest_is_one_error(tmp_path, content):
    (tmp_path / "chess").mkdir()
    (tmp_path / "chess" / "manifest.json").write_bytes(content)
    with pytest.raises(T.TasksTreeError, match="manifest.json"):
        T.TasksTree(tmp_path).read_manifest("chess")


def test_reads_are_bounded_and_never_block(tmp_path, monkeypatch):
    tree = T.TasksTree(tmp_path)
    (tmp_path / "chess").mkdir()
    os.mkfifo(tree.manifest_path("chess"))  # a FIFO would block an open() for reading forever
    result = {}
    reader = threading.Thread(target=lambda: result.update(err=_error(lambda: tree.read_manifest("chess"))), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive() and "not a regular file" in result["err"]
    os.unlink(tree.manifest_path("chess"))
    os.symlink("/dev/zero", tree.manifest_path("chess"))  # a symlink is refused, /dev/zero never read
    assert "unreadable" in _error(lambda: tree.read_manifest("chess"))
    os.unlink(tree.manifest_path("chess"))
    monkeypatch.setattr(T, "MAX_TREE_JSON_BYTES", 64)
    tree.manifest_path("chess").write_text(json.dumps(_manifest("chess", [{"case_id": "x" * 100}])))
    with pytest.raises(T.TasksTreeError, match="larger than"):
        T.read_tree_json(tree.manifest_path("chess"), cap=T.MAX_TREE_JSON_BYTES)


def _error(fn) -> str:
    try:
        fn()
    except T.TasksTreeError as exc:
        return str(exc)
    return ""


def test_cases_file_is_read_with_the_bound(tmp_path):
    (tmp_path / "chess").mkdir()
    (tmp_path / "chess" / "game.toml").write_text("")
    os.mkfifo(tmp_path / "chess" / "cases.json")
    with pytest.raises(T.TasksTreeError, match="cases"):
        T.TasksTree(tmp_path).listed_case_ids("chess")


# -- nobody else spells the layout ----------------------------------------------------------------------

LAYOUT_NAMES = {"gt", "media", "manifest.json", "cases.json"}


#: Spellings that are names, not paths: the baselines' inputs digest keys a ground truth by it (changing it
#: changes docs/RESULTS.md's digest).
NOT_PATHS = {("baselines/run.py", 'f"{g}/gt/{cid}"')}


def layout_joins(path: Path) -> list[str]:
    """`x / "gt"`-style path joins and f"{game}/gt/{case_id}..." spellings in a module."""
    out = []
    text = path.read_text(encoding="utf-8")
    rel = str(path.relative_to(PKG))
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and side.value in LAYOUT_NAMES:
                    out.append(f"{path.name}:{node.lineno}: / {side.value!r}")
        elif isinstance(node, ast.JoinedStr) and (rel, ast.get_source_segment(text, node)) not in NOT_PATHS:
            v = node.values
            out += [f"{path.name}:{node.lineno}: f-string {v[i].value!r}" for i in range(1, len(v) - 1)
                    if isinstance(v[i], ast.Constant) and v[i].value in ("/gt/", "/media/")
                    and isinstance(v[i - 1], ast.FormattedValue) and isinstance(v[i + 1], ast.FormattedValue)]
    return out


def test_only_the_owner_spells_the_tree_layout():
    found = {str(p.relative_to(PKG)): layout_joins(p) for p in sorted(PKG.rglob("*.py"))
             if p != PKG / "core" / "tasks.py"}
    assert {k: v for k, v in found.items() if v} == {}
    assert layout_joins(PKG / "core" / "tasks.py")  # the check sees the owner's own
