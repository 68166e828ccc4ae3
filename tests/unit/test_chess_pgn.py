"""A user's PGN file as chess case records (`import-cases --pgn`): the reader against python-chess's own
reading of the same file, the rules an import shares with the built-in selection, the match key of a
built-in game read from its PGN, and every refusal as one line (fast: no engine)."""
from __future__ import annotations

import bz2
import io
import json
from pathlib import Path

import chess
import chess.pgn
import pytest

from video_arena.games.base import load_plugin
from video_arena.games.chess import pgn as R
from video_arena.games.chess import plugin as C

P = load_plugin("chess")
TESTS = Path(__file__).resolve().parents[1]
DEEP_BLUE = TESTS / "fixtures" / "records" / "chess" / "kasparov-deep-blue-1997.pgn"


def games_of(text: str) -> list[chess.pgn.Game]:
    stream, out = io.StringIO(text), []
    while (game := chess.pgn.read_game(stream)) is not None:
        out.append(game)
    return out


def san_type(node: chess.pgn.ChildNode) -> str:
    """The event type the game's own SAN says (python-chess's notation of the move, not the plugin's)."""
    san = node.san()
    if san.endswith("#"):
        return "checkmate"
    if san.endswith("+"):
        return "check"
    return "promotion" if "=" in san else "castle" if san.startswith("O-O") else "capture" if "x" in san else "move"


def write(tmp_path: Path, text: str, name: str = "g.pgn") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def first_game_text() -> str:
    return DEEP_BLUE.read_text().split("\n\n[")[0] + "\n"


# -- the shipped record against python-chess ---------------------------------------------------------------

def test_every_game_of_the_file_is_a_record_whose_events_agree_with_python_chess():
    records = P.records_from_files("pgn", [DEEP_BLUE])
    games = games_of(DEEP_BLUE.read_text())
    assert len(records) == len(games) == 6
    for k, (record, game) in enumerate(zip(records, games), 1):
        src = record["source"]
        assert (src["collection"], src["format"], src["file"], src["game"]) == ("imported", "pgn", DEEP_BLUE.name, k)
        assert (src["white"], src["black"], src["result"]) == tuple(game.headers[h] for h in ("White", "Black", "Result"))
        assert record["moves"] == [m.uci() for m in game.mainline_moves()] and "start_fen" not in record
        steps = P.replay(record)
        nodes = list(game.mainline())
        assert [s.type for s in steps] == [san_type(n) for n in nodes]
        assert [s.actor for s in steps] == ["white" if n.parent.board().turn else "black" for n in nodes]
        assert [s.where for s in steps] == [chess.square_name(n.move.to_square if not n.parent.board().is_castling(n.move)
                                                              else (chess.G1 if chess.square_file(n.move.to_square) > 4 else chess.C1)
                                                              + (56 if not n.parent.board().turn else 0))
                                            for n in nodes]
    assert len({r["source"]["id"] for r in records}) == 6


def test_the_rules_take_the_decisive_games_of_a_case_length_and_refuse_the_rest_in_one_line():
    why = [P.refusal(r) for r in P.records_from_files("pgn", [DEEP_BLUE])]
    assert why[:2] == ["", ""]
    assert all("result '1/2-1/2' is not decisive" in w for w in why[2:5])
    assert why[5] == f"{DEEP_BLUE.name} game 6: 37 plies, outside the 40-140 a case has"
    # one match from the file for import-cases: the first game that qualifies
    assert P.record_from_files("pgn", [DEEP_BLUE])["source"]["game"] == 1


def test_the_built_in_selection_is_the_same_rules_and_the_exclusions():
    cands = set(P.candidates())
    assert cands == {i for i in range(len(C.load_games()))
                     if i not in C.EXCLUDED_INDICES and not P.refusal(P.record_of(i))}
    drawn = next(i for i, (h, _) in enumerate(C.load_games()) if h["Result"] == "1/2-1/2")
    assert "not decisive" in P.refusal(P.record_of(drawn)) and drawn not in cands


def test_a_built_in_games_own_pgn_imports_with_that_cases_match_key(tmp_path):
    gt = json.loads(next((TESTS.parent / "tasks" / "chess" / "gt").glob("*.json")).read_text())
    index = gt["record"]["source"]["index"]
    text = bz2.decompress(C.DATA.read_bytes()).decode("latin-1")
    stream, offsets = io.StringIO(text), []
    while True:
        offsets.append(stream.tell())
        if chess.pgn.read_headers(stream) is None:
            break
    path = write(tmp_path, text[offsets[index]:offsets[index + 1]], "builtin.pgn")
    record = P.record_from_files("pgn", [path])
    assert record["moves"] == gt["record"]["moves"]
    assert P.match_key(record) == P.match_key(gt["record"])
    assert record["source"]["id"] != gt["record"]["source"]["id"]      # another file, the same match


# -- what PGN carries besides the main line -------------------------------------------------------------------

def test_comments_nags_and_nested_variations_are_read_past(tmp_path):
    text = first_game_text().replace(
        "1.Nf3 d5 2.g3", "1.Nf3 {a comment (with a bracket)} d5 $1 (1...Nf6 2.c4 (2.g3 g6) 2...g6) 2.g3 !?")
    path = write(tmp_path, text)
    record = P.records_from_files("pgn", [path])[0]
    assert record["moves"] == P.records_from_files("pgn", [DEEP_BLUE])[0]["moves"]
    assert P.refusal(record) == ""


def test_a_game_from_a_fen_position_is_read_from_that_position_and_keyed_by_it(tmp_path):
    game = games_of(DEEP_BLUE.read_text())[0]
    board = game.board()
    nodes = list(game.mainline())
    for node in nodes[:10]:
        board.push(node.move)
    rest = " ".join(n.san() for n in nodes[10:])
    path = write(tmp_path, f'[Result "1-0"]\n[SetUp "1"]\n[FEN "{board.fen()}"]\n\n6. {rest} 1-0\n')
    record = P.record_from_files("pgn", [path])
    assert record["start_fen"] == board.fen() and record["moves"] == [n.move.uci() for n in nodes[10:]]
    full = P.records_from_files("pgn", [DEEP_BLUE])[0]
    assert P.replay(record) == P.replay(full)[10:]
    assert P.match_key(record) != P.match_key(full)
    assert P.render_position(record, 0).tobytes() == C.draw(board, None).tobytes()


# -- refusals: one line, exit 2, nothing written ---------------------------------------------------------------

@pytest.mark.parametrize("edit,needle", [
    (lambda t: t.replace('[Result "1-0"]', '[Result "*"]').replace("g7\n1-0", "g7\n*"), "result '*' is not decisive"),
    (lambda t: t.replace('[Result "1-0"]', '[Result "1/2-1/2"]').replace("g7\n1-0", "g7\n1/2-1/2"), "is not decisive"),
    (lambda t: '[Variant "Antichess"]\n' + t, "a 'Antichess' game: only standard chess"),
    (lambda t: '[Variant "chess960"]\n' + t, "only standard chess"),
    (lambda t: t.replace("13.Nh4", "13.Nh9"), "move 25 cannot be read"),
    (lambda t: t.replace("13.Nh4", "13.Ke2"), "move 25 cannot be read"),
    (lambda t: '[SetUp "1"]\n[FEN "8/8/8/8/8/8/8/8 w - - 0 1"]\n' + t, "is not a legal chess position"),
    (lambda t: t.split("14.")[0] + "1-0\n", "26 plies, outside the 40-140"),
    (lambda t: "this is no chess game\n", "no PGN game in it"),
    (lambda t: t.split("\n\n")[0] + "\n\n1-0\n", "game 1: no move in it"),
], ids=["undecided", "draw", "variant", "chess960", "unreadable-move", "illegal-move", "bad-fen", "short", "no-pgn", "no-move"])
def test_a_game_the_cases_cannot_use_is_refused_in_one_line(tmp_path, import_refused, edit, needle):
    path = write(tmp_path, edit(first_game_text()))
    assert needle in import_refused("chess", "pgn", path)


def test_a_final_position_that_contradicts_the_result_is_refused():
    fools_mate = ["f2f3", "e7e5", "g2g4", "d8h4"]
    record = {"source": {"id": "t", "result": "1-0"}, "moves": fools_mate}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(C, "MIN_PLIES", 1)
        assert P.refusal(record) == "t: the final position is checkmate (0-1), not 1-0"
        assert P.refusal(dict(record, source={"id": "t", "result": "0-1"})) == ""


def test_caps_size_games_plies_and_non_regular_files(monkeypatch, import_refused, import_refuses_unreadable):
    import_refuses_unreadable("chess", "pgn", R.MAX_PGN_BYTES, DEEP_BLUE)
    monkeypatch.setattr(R, "MAX_PLIES", 60)
    records = R.read_pgn(DEEP_BLUE)
    assert records[0]["reader_error"] == f"{DEEP_BLUE.name} game 1: more than 60 plies" and len(records[0]["moves"]) == 60
    assert "more than 60 plies" in P.refusal(records[0])
    monkeypatch.setattr(R, "MAX_GAMES", 5)
    assert "more than 5 games" in import_refused("chess", "pgn", DEEP_BLUE)


def test_the_importing_doc_states_the_readers_caps():
    doc = (TESTS.parent / "docs" / "IMPORTING.md").read_text(encoding="utf-8")
    for cap in (f"at most {R.MAX_PGN_BYTES // 2**20} MiB", f"at most {R.MAX_GAMES:,} games",
                f"at most {R.MAX_PLIES} plies read per game", f"cut to {R.MAX_HEADER_CHARS} characters",
                f"fewer than {C.MIN_PLIES}", f"more than {C.MAX_PLIES} plies"):
        assert cap in " ".join(doc.split()), cap
