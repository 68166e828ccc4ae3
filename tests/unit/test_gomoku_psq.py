"""A Piskvork / Gomocup .psq file as a Gomoku case record (`import-cases --psq`): the stones against the
file's own x,y lines, the freestyle rules an import shares with the built-in selection, the match key,
and every refusal as one line (fast: no playouts)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from video_arena.games.base import load_plugin
from video_arena.games.gomoku import engine as E
from video_arena.games.gomoku import plugin as G
from video_arena.games.gomoku import psq as Q

P = load_plugin("gomoku")
TESTS = Path(__file__).resolve().parents[1]
HEADER = "Piskvorky 15x15, 11:11, 0"


def builtin_gt() -> dict:
    return json.loads(next((TESTS.parent / "tasks" / "gomoku" / "gt").glob("*.json")).read_text())


def psq_lines(moves: list[str]) -> list[str]:
    """A game's stones as .psq lines (x = column from the left, y = row from the top, both from 1)."""
    out = []
    for k, name in enumerate(moves):
        r, c = E.parse_coord(name)
        out.append(f"{c + 1},{r + 1},{1000 + k}")
    return out


def write(tmp_path: Path, lines: list[str], name: str = "game.psq") -> Path:
    path = tmp_path / name
    path.write_text("\r\n".join(lines) + "\r\n", encoding="ascii")
    return path


def game_file(tmp_path: Path, moves: list[str] | None = None, header: str = HEADER) -> Path:
    moves = builtin_gt()["record"]["moves"] if moves is None else moves
    return write(tmp_path, [header, *psq_lines(moves), "pbrain-first.zip", "pbrain-second.zip", "-1"])


def test_the_stones_are_the_files_x_y_lines_black_first(tmp_path):
    lines = [HEADER, "8,8,0", "1,1,5", "15,15,0", "1,15", "2,3,7", "Alpha", "Beta", "0"]
    moves = [line.split(",") for line in lines[1:6]]
    names = [f"{E.COLUMNS[int(x) - 1]}{E.SIZE + 1 - int(y)}" for x, y, *_ in moves]
    assert names == ["H8", "A15", "P1", "A1", "B13"]
    record = Q.read_psq(write(tmp_path, lines))
    assert record["moves"] == names and record["result"] == "none"
    assert record["source"]["players"] == ["Alpha", "Beta"] and record["source"]["format"] == "psq"
    assert [s.actor for s in P.replay(record)] == ["black", "white", "black", "white", "black"]


def test_a_whole_game_reads_back_with_its_five_and_the_built_in_games_key(tmp_path):
    gt = builtin_gt()
    record = P.record_from_files("psq", [game_file(tmp_path)])
    assert record["moves"] == gt["record"]["moves"] and record["result"] == gt["record"]["result"]
    assert P.refusal(record) == ""
    steps = P.replay(record)
    assert steps[-1].type == "five" and steps[-1].actor == ("black" if len(steps) % 2 else "white")
    assert [s.type for s in steps] == [e["type"] for e in gt["events"]]
    assert P.match_key(record) == P.match_key(gt["record"])
    assert "seed" not in record      # V_t's playouts are seeded as every game's: the record has no seed
    assert record["source"]["id"].startswith("psq-") and record["source"]["players"] == ["pbrain-first.zip",
                                                                                          "pbrain-second.zip"]


def test_the_built_in_selection_is_the_same_rules():
    record = builtin_gt()["record"]
    assert G.rules_refusal(record) == ""
    assert "ends without five" in G.rules_refusal(dict(record, moves=record["moves"][:-1]))
    assert "made five but the record says 'draw'" in G.rules_refusal(dict(record, result="draw"))


def fives_then(tmp_path: Path, extra: list[str]) -> Path:
    moves = builtin_gt()["record"]["moves"]
    return game_file(tmp_path, moves + extra)


@pytest.mark.parametrize("make,needle", [
    (lambda t: game_file(t, header="Piskvorky 20x20, 11:11, 0"), "a 20x20 board; Gomoku cases are 15x15"),
    (lambda t: write(t, ["Renju 15x15", "8,8,0"]), "not a Piskvork .psq file"),
    (lambda t: write(t, [HEADER]), "no stone in it"),
    (lambda t: write(t, [HEADER, "8,8,0", "16,3,0"]), "stone 2 at 16,3 is off the 15x15 board"),
    (lambda t: write(t, [HEADER, "8,8,0", "0,3,0"]), "stone 2 at 0,3 is off the 15x15 board"),
    (lambda t: write(t, [HEADER, "8,8,-5"]), "took -5 ms"),
    (lambda t: game_file(t, builtin_gt()["record"]["moves"][:-1]), "ends without five in a row"),
    (lambda t: fives_then(t, ["A1"]), "comes after the game was won"),
    (lambda t: game_file(t, builtin_gt()["record"]["moves"][:3] + builtin_gt()["record"]["moves"][:1]),
     "stones, outside the 25-150"),
    (lambda t: game_file(t, (lambda m: m[:20] + m[1:2] + m[20:])(builtin_gt()["record"]["moves"])),
     "stone 21 (" + builtin_gt()["record"]["moves"][1] + ") is on an occupied point"),
], ids=["20x20", "not-psq", "empty", "off-board", "zero", "bad-time", "no-five", "after-five", "short", "occupied"])
def test_a_game_the_cases_cannot_use_is_refused_in_one_line(tmp_path, import_refused, make, needle):
    assert needle in import_refused("gomoku", "psq", make(tmp_path))


def test_caps_size_stones_and_non_regular_files(tmp_path, import_refused, import_refuses_unreadable):
    import_refuses_unreadable("gomoku", "psq", Q.MAX_PSQ_BYTES, game_file(tmp_path))
    full = [f"{x},{y},0" for y in range(1, 16) for x in range(1, 16)]
    assert "more than 225 stones" in import_refused("gomoku", "psq", write(tmp_path, [HEADER, *full, "1,1,0"]))


def test_the_importing_doc_states_the_readers_caps():
    doc = " ".join((TESTS.parent / "docs" / "IMPORTING.md").read_text(encoding="utf-8").split())
    for cap in (f"at most {Q.MAX_PSQ_BYTES // 1024} KiB", f"at most {E.SIZE * E.SIZE} stones",
                f"cut to {Q.MAX_NAME_CHARS} characters", f"fewer than {G.MIN_MOVES} or more than {G.MAX_MOVES} stones",
                "0 to 10^9 ms"):
        assert cap in doc, cap
    assert Q.MAX_MS == 10**9
