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
# docs/PROTOCOLS.md, "The sampling grid" (never upscaled); CS2 renders at 1920x1080, DOTA 2 at 512x512 (docs/GAMES.md)
RENDER_SIZES = {"chess": (548, 548), "go": (612, 612), "gomoku": (504, 504), "sc2": (1536, 1536),
                "doudizhu": (1280, 720), "gfootball": (1280, 720), "badminton": (1280, 720),
                "cs2": (1920, 1080), "dota2": (512, 512)}


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


def _with(base: str, section: str, line: str) -> str:
    """`base` (a game.toml) with `line` added at the top of its `[section]` table."""
    head = f"[{section}]\n"
    return base.replace(head, head + line + "\n", 1) if head in base else base + f"\n{head}{line}\n"


def test_the_typed_definition_carries_the_game_knowledge():
    from video_arena.core.tasks import load_game

    chess, dz = load_definition("chess"), load_definition("doudizhu")
    assert chess.where_pattern("castle") == "[gc][18]" and chess.where_pattern("move") == "[a-h][1-8]"
    assert dz.where_order == "3456789tjqka2br" and dz.where_max_repeat("b") == 1 and dz.where_max_repeat("3") == 4
    assert chess.baseline_events_per_minute == 6.0 and chess.chance_where == (tuple("abcdefgh"), tuple("12345678"))
    assert load_definition("go").chance_where[1] == tuple(str(r) for r in range(1, 20))
    assert load_definition("go").value_not_in_picture.startswith("the komi")
    assert "lichess.org" in chess.match_sites and load_definition("doudizhu").match_sites == ()
    assert load_definition("cs2").baseline_events_per_minute is None and load_definition("cs2").chance_where == ()
    assert load_definition("cs2").value_not_in_picture == ""
    assert [f for f, _ in load_definition("dota2").record_formats] == ["opendota"]
    assert [[f for f, _ in load_definition(g).record_formats] for g in ("chess", "go", "gomoku")] == [["pgn"], ["sgf"], ["psq"]]
    assert [f for f, _ in load_definition("doudizhu").record_formats] == ["rlcard-showdown"]
    assert [f for f, _ in load_definition("gfootball").record_formats] == ["gfootball-dump"]
    assert load_definition("cs2").record_formats == ()
    # the tasks tree's copy is the same definition
    assert load_game("chess", paths.default_tasks_root()) == chess


@pytest.mark.parametrize("section,line,needle", [
    ("events", "where_pattern = { nosuchtype = 'a' }", "where_pattern names unknown types"),
    ("events", "where_pattern = '[a-'", "not a regular expression"),
    ("events", "where_pattern = 3", "where_pattern must be"),
    ("events", "where_max_repeats = { a = 0 }", "where_max_repeats must be"),
    ("events", "where_order = 5", "where_order must be"),
    ("baselines", "chance_where = 'abc'", "chance_where must be a list of parts"),
    ("baselines", "chance_where = [['a', '']]", "chance_where must be a list of parts"),
    ("value", "not_in_picture = 1", "not_in_picture must be a text"),
    ("audit", "match_sites = 'x.org'", "match_sites must be a list"),
    ("audit", "match_sites = [' x.org']", "match_sites must be a list"),
    ("import", "record_formats = { Bad_Name = 'x' }", "record_formats must be a table"),
    ("import", "record_formats = { ok = 3 }", "record_formats must be a table"),
])
def test_a_malformed_knowledge_key_is_a_tasks_tree_error(section, line, needle):
    from video_arena.core.tasks import TasksTreeError, parse_game_toml
    from video_arena.games.base import definition_path

    base = definition_path("chess").read_text(encoding="utf-8")
    key = line.split(" =")[0]
    base = "\n".join("# " + x if x.startswith(key + " =") else x for x in base.split("\n"))  # the chess value out
    with pytest.raises(TasksTreeError, match=needle):
        parse_game_toml(_with(base, section, line), source="x/game.toml")


def test_the_audit_flags_every_games_match_sites():
    from video_arena.core import audit as A

    for game in GAMES:
        for site in load_definition(game).match_sites:
            rx = dict((name, r) for name, r in A.RULES if name == "match_lookup")["match_lookup"]
            assert rx.search(f"curl -s https://www.{site}/match/123"), (game, site)


def test_the_record_formats_are_declared_and_docs_games_lists_them():
    from video_arena.games.cli import games_doc

    assert [f for f, _ in load_definition("sc2").record_formats] == ["sc2replay"]
    assert [f for f, _ in load_definition("badminton").record_formats] == ["shuttleset"]
    doc = games_doc()
    for game, fmt in (("sc2", "sc2replay"), ("badminton", "shuttleset"), ("dota2", "opendota"),
                      ("chess", "pgn"), ("go", "sgf"), ("gomoku", "psq"),
                      ("doudizhu", "rlcard-showdown"), ("gfootball", "gfootball-dump")):
        assert f"`video-arena import-cases --game {game} --{fmt} FILE ...`" in doc
    assert (paths.REPO_ROOT / "docs" / "GAMES.md").read_text(encoding="utf-8") == doc   # regenerated


def test_games_ceiling_prints_each_case_and_the_mean_or_refuses_in_one_line(capsys, tmp_path):
    assert games_cli.main(["ceiling", "dota2"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0] == "| case | events | visible T2 | visible T3 |" and len(out) == 2 + 20 + 1
    assert out[-1] == "| dota2: mean of 20 cases | | 1.000 | 1.000 |"      # DOTA 2's V_t reads only the picture
    for argv, needle in ((["ceiling", "nope"], "no game 'nope'"), (["ceiling", "cs2"], "cs2 has no visible_features"),
                         (["ceiling", "dota2", "--tasks-root", str(tmp_path)], "holds no ground truth")):
        assert games_cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and needle in err, err
