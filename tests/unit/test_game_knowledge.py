"""Game knowledge lives in the game's folder: no module outside `video_arena/games/` names a game.

A new game is `video_arena/games/<game>/` (game.toml, plugin), `tasks/<game>/`, docs and tests; every
other module reads what it needs from the typed definition (`core.tasks.GameDefinition`: coordinate
rules, the baselines' rate, what the perception agent reads, the sites the egress audit flags).

Read with `ast`, nothing is imported. A module names a game when one of its identifiers (split at
`_`) or one of its string constants (split into words) is a game's folder name. Docstrings are prose,
usage examples (`--games chess,go`) included, and are not read. "go" is also an English word and a
programming language, so it counts only as a whole string or a whole identifier. No module is excepted:
the standalone agents (baselines/perception_agent.py, baselines/chance_agent.py) are given their games'
knowledge (the readers beside the dispatcher, the chance tables on the command line) and recognise the
game by the title their instruction states.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from video_arena.games.base import game_names

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "video_arena"
#: game names that are also ordinary words: in a string only the whole string names the game
ORDINARY_WORDS = {"go"}


def modules() -> list[Path]:
    inside = [p for p in sorted(PKG.rglob("*.py")) if (PKG / "games") not in p.parents]
    top = sorted(REPO.glob("*.py")) + sorted((REPO / "agents").glob("*.py")) + sorted((REPO / "judge").glob("*.py"))
    return inside + top


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def names_of_games(source: str, games: set[str]) -> list[tuple[int, str, str]]:
    """(line, game, the text naming it) for every identifier or string constant of `source` naming a game."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        idents: list[str] = []
        if isinstance(node, ast.Name):
            idents = [node.id]
        elif isinstance(node, ast.Attribute):
            idents = [node.attr]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            idents = [node.name]
        elif isinstance(node, ast.arg):
            idents = [node.arg]
        elif isinstance(node, ast.keyword) and node.arg:
            idents = [node.arg]
        elif isinstance(node, ast.alias):
            idents = [node.asname or node.name]
        for ident in idents:
            for part in re.split(r"[_.]", ident.lower()):
                if part in games and (part not in ORDINARY_WORDS or part == ident.lower()):
                    found.append((getattr(node, "lineno", 0), part, ident))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value.lower()
            if text.strip() in games:
                found.append((node.lineno, text.strip(), node.value))
                continue
            for word in re.findall(r"[a-z0-9]+", text):
                if word in games and word not in ORDINARY_WORDS:
                    found.append((node.lineno, word, node.value[:80]))
    return found


def test_the_scan_finds_a_game_named_in_code_and_ignores_prose():
    games = set(game_names())
    assert {g for _, g, _ in names_of_games('RULES = {"chess": 1, "go": 2}\n', games)} == {"chess", "go"}
    assert names_of_games('def f(sc2_area):\n    return dota2.x\n', games)
    assert names_of_games('x = f"{g}: reads sc2 replays"\n', games)
    assert names_of_games('import video_arena.games.chess.plugin as chess_plugin\n', games)
    assert not names_of_games('"""Usage: --games chess,go."""\nmsg = "where the jobs go"\n', games)
    assert not names_of_games('x = "lichess.org or sc2replaystats.com"\n', games)
    assert not names_of_games('def compose_go_binary():\n    return "go install x"\n', games)
    assert names_of_games('go = 1\n', games)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_module_outside_games_names_a_game(path: Path):
    hits = names_of_games(path.read_text(encoding="utf-8"), set(game_names()))
    assert not hits, (f"{path.relative_to(REPO)} names a game (game knowledge belongs in video_arena/games/<game>/ "
                      f"and its game.toml): " + "; ".join(f"line {n}: {g} in {t!r}" for n, g, t in hits))
