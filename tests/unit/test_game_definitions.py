"""Every game plugin's definition: parses, renders its instruction for both protocols without a
surviving marker, carries a valid example row, and the tasks tree is in sync with the plugins."""
from __future__ import annotations

import json
import re

import pytest

from video_arena import paths
from video_arena.core.instruction import render_instruction
from video_arena.games import cli as games_cli
from video_arena.games.base import game_names, load_definition
from video_arena.core.judge_loader import load_judge

GAMES = game_names()
MARKER = re.compile(r"<!--|-->|A-ONLY|B-ONLY|\{\{|\}\}|\{%|%\}")
# docs/PROTOCOLS.md, "The sampling grid" (never upscaled); CS2 and DOTA 2 render at 1920x1080 (docs/GAMES.md)
RENDER_SIZES = {"chess": (548, 548), "go": (612, 612), "gomoku": (504, 504), "sc2": (1536, 1536),
                "doudizhu": (1280, 720), "gfootball": (1280, 720), "badminton": (1280, 720),
                "cs2": (1920, 1080), "dota2": (1920, 1080)}


def test_the_five_external_games_are_defined():
    assert {"cs2", "dota2", "sc2", "gfootball", "badminton"} <= set(GAMES)


@pytest.mark.parametrize("game", GAMES)
def test_definition_parses_and_is_complete(game):
    d = load_definition(game)
    assert d.name == game
    assert len(d.sides) >= 2 and len(set(d.sides)) == len(d.sides)
    assert set(d.raw["events"]["descriptions"]) == set(d.event_types), "one description per type, no extra"
    assert d.raw["instruction"]["about"].strip() and d.where_convention.strip() and d.value_definition.strip()
    assert 0 < d.band < 0.5 and d.value_neutral - d.band >= 0 and d.value_neutral + d.band <= 1
    assert not set(d.state_labels) & set(d.event_types)
    if game in RENDER_SIZES:
        assert tuple(d.render_size) == RENDER_SIZES[game]


@pytest.mark.parametrize("game", GAMES)
def test_example_row_is_a_valid_answer_row(game):
    """The instruction's example row must itself pass the judge (vocabulary, where-convention)."""
    d = load_definition(game)
    row = json.loads(d.raw["instruction"]["example_row"])
    J = load_judge()
    rows, err = J.check_rows([row], d.judge_spec())
    assert err is None, err
    if row["type"] in d.types_without_where:
        assert row["where"] == ""
    else:
        assert row["where"] != ""


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("protocol", ["A", "B"])
def test_instruction_renders_without_markers(game, protocol):
    d = load_definition(game)
    text = render_instruction(games_cli.render_game_instruction(game), protocol, source=game)
    assert not MARKER.search(text), MARKER.search(text)
    assert d.title in text and d.where_convention.split()[0] in text
    for t in d.event_types:
        assert f"`{t}`" in text
    for label in d.state_labels:
        assert f"`{label}`" in text
    other = "answer.json" if protocol == "A" else "video_ts"
    assert other not in text, f"protocol {protocol} text carries the other protocol's delivery"


def test_tasks_tree_is_in_sync_with_plugins():
    problems = games_cli.check(paths.default_tasks_root())
    assert problems == [], "run `video-arena games sync`:\n" + "\n".join(problems)


def test_check_detects_a_stale_tree(tmp_path):
    games_cli.sync(tmp_path)
    assert games_cli.check(tmp_path) == []
    target = tmp_path / GAMES[0] / "instruction.md"
    target.write_text(target.read_text() + "\nedited by hand\n")
    (tmp_path / GAMES[-1] / "game.toml").unlink()
    problems = games_cli.check(tmp_path)
    assert any("instruction.md: differs" in p for p in problems)
    assert any("game.toml: missing" in p for p in problems)
