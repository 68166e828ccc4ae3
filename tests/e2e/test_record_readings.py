"""Every record format `video-arena import-cases` reads, checked against an independent reading of the shipped
record (issue 37): each test imports its record once, end to end (engines or shipped models for V_t, the video
rendered), and compares the events of the case it made (type, actor, where, order; times where the record
has them) with what the test reads from the file itself, without the toolkit's reader of that format:

- PGN (`--pgn`): python-chess's reading of the game: every move's square, mover, capture, check, mate,
  castling and promotion;
- SGF (`--sgf`): a regular expression over the file's AB/B/W properties and captures played out here on a
  dictionary board;
- .psq (`--psq`): the file's text lines, five/four/open-three found here on a dictionary board from the
  definitions of docs/GAMES.md;
- RLCard Showdown JSON (`--rlcard-showdown`): the json module: each turn's cards, its seat, passes, bombs,
  rockets and the play that empties a hand;
- gfootball episode dump (`--gfootball-dump`): the dump's per-step observations (loaded by the toolkit's
  restricted unpickler, nothing else of the toolkit): the score's changes, the game-mode changes, the ball's
  position and owner;
- StarCraft II replay (`--sc2replay`): sc2reader's tracker events read here (the toolkit's reader is
  replay.to_record + match.events; sc2reader itself is the library both use, the only replay parser installed):
  town halls started and destroyed, units killed, the winner, the grid over the recorded positions;
- OpenDota match JSON (`--opendota`): the json module: objectives, the API's result, the wards' first time.

ShuttleSet (`--shuttleset`) has its check in tests/e2e/test_shuttleset_import.py."""
from __future__ import annotations

import gzip
import io
import json
import lzma
import re
import shutil
from pathlib import Path

import pytest

from fixtures.record_imports import gts, import_record

pytestmark = pytest.mark.slow

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "records"
OPENDOTA = Path(__file__).resolve().parents[1] / "fixtures" / "opendota"


def imported_case(tmp_path_factory, game: str, fmt: str, files: list[Path], pick: int | None = None) -> dict:
    """The one case `import-cases --game GAME --FORMAT FILES` makes: its ground truth."""
    tree = tmp_path_factory.mktemp(f"readings-{game}") / "tree"
    import_record(tree, game, fmt, files, "test", pick=pick)
    (gt,) = gts(tree, game)
    assert gt["record"]["source"]["format" if game != "dota2" else "collection"] == fmt
    return gt


def events(gt: dict, *fields: str) -> list[tuple]:
    return [tuple(e[f] for f in fields) for e in gt["events"]]


# -- chess: python-chess -----------------------------------------------------------------------------------

PGN = RECORDS / "chess" / "kasparov-deep-blue-1997.pgn"


def test_pgn_every_move_is_python_chess_reading_of_the_game(tmp_path_factory):
    import chess
    import chess.pgn

    gt = imported_case(tmp_path_factory, "chess", "pgn", [PGN], pick=1)
    stream = io.StringIO(PGN.read_text(encoding="utf-8"))
    game = chess.pgn.read_game(stream)            # --pick 1: the file's first game (decisive, 89 plies)
    assert gt["record"]["source"]["game"] == 1 and game.headers["Result"] == "1-0"
    want, board = [], game.board()
    for move in game.mainline_moves():
        mover = "white" if board.turn == chess.WHITE else "black"
        castle, capture, promotion = board.is_castling(move), board.is_capture(move), move.promotion is not None
        board.push(move)
        kind = ("checkmate" if board.is_checkmate() else "check" if board.is_check() else "promotion" if promotion
                else "castle" if castle else "capture" if capture else "move")
        want.append((kind, mover, chess.square_name(move.to_square)))   # castling: the king's square (e1g1)
    assert len(want) == 89 and {k for k, _, _ in want} >= {"move", "capture", "check", "castle"}
    assert events(gt, "type", "actor", "where") == want


# -- go: the SGF's own properties, captures played out here -------------------------------------------------

SGF = RECORDS / "go" / "fox_go_server_handicap.sgf"
GO_COLUMNS = "abcdefghjklmnopqrst"


def _sgf_reading(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """(the handicap stones, [(colour, point or '' for a pass)]) from the file's main line (it has no variation)."""
    assert "(" not in text[1:]
    setup = [p for block in re.findall(r"AB((?:\s*\[[a-s]{2}\])+)", text) for p in re.findall(r"\[([a-s]{2})\]", block)]
    moves = [(c, "" if p in ("", "tt") else p) for c, p in re.findall(r";\s*([BW])\[([a-t]{0,2})\]", text)]
    return setup, moves


def _go_captures(setup: list[str], moves: list[tuple[str, str]]) -> list[int]:
    """How many opposing stones each move removes, on a plain dictionary board (19x19)."""
    board = {(ord(p[0]) - 97, ord(p[1]) - 97): "B" for p in setup}      # (column, row from the top)

    def group(p):
        seen, todo, libs = {p}, [p], 0
        while todo:
            x, y = todo.pop()
            for q in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
                if not (0 <= q[0] < 19 and 0 <= q[1] < 19) or q in seen:
                    continue
                if q not in board:
                    libs += 1
                elif board[q] == board[p]:
                    seen.add(q)
                    todo.append(q)
        return seen, libs

    out = []
    for colour, point in moves:
        if not point:
            out.append(0)
            continue
        x, y = ord(point[0]) - 97, ord(point[1]) - 97
        assert (x, y) not in board, point
        board[(x, y)] = colour
        taken = 0
        for q in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if q in board and board[q] != colour:
                stones, libs = group(q)
                if libs == 0:
                    taken += len(stones)
                    for s in stones:
                        del board[s]
        assert group((x, y))[1] > 0, f"suicide at {point}"
        out.append(taken)
    return out


def test_sgf_every_stone_is_the_files_move_and_captures_are_played_out(tmp_path_factory, monkeypatch):
    from video_arena.games.go import evaluator as kg

    def no_katago():
        raise AssertionError("KataGo must not run here: tests/fixtures/records/go/katago-vt/ is the V_t cache")

    vt = tmp_path_factory.mktemp("go-vt")
    for f in (RECORDS / "go" / "katago-vt").iterdir():
        shutil.copy(f, vt / f.name)
    monkeypatch.setenv(kg.VT_CACHE_ENV, str(vt))
    monkeypatch.setattr(kg, "engine", no_katago)
    gt = imported_case(tmp_path_factory, "go", "sgf", [SGF])
    text = SGF.read_text(encoding="utf-8")
    setup, moves = _sgf_reading(text)
    assert setup == ["pd", "dp"] and len(moves) == 100 and moves[0] == ("W", "dc")
    # the handicap stones (on the board from the first frame, no event) and the komi are the file's
    assert gt["record"]["handicap"] == setup and gt["record"]["komi"] == float(re.search(r"KM\[([^\]]*)\]", text)[1])
    taken = _go_captures(setup, moves)
    want = [("pass" if not p else "capture" if n else "move", {"B": "black", "W": "white"}[c],
             "" if not p else f"{GO_COLUMNS[ord(p[0]) - 97]}{19 - (ord(p[1]) - 97)}")
            for (c, p), n in zip(moves, taken)]
    assert sum(t == "capture" for t, _, _ in want) == 3
    assert events(gt, "type", "actor", "where") == want


# -- gomoku: the .psq file's lines, shapes found here --------------------------------------------------------

PSQ = RECORDS / "gomoku" / "engine-seed-1002.psq"
GOMOKU_COLUMNS = "ABCDEFGHJKLMNOP"
LINES = ((0, 1), (1, 0), (1, 1), (1, -1))


def _psq_stones(text: str) -> list[tuple[int, int]]:
    """(x, y) of every stone, in order: the lines after the header up to the first that is no 'x,y,ms' line."""
    lines = text.splitlines()
    assert lines[0].startswith("Piskvorky 15x15")
    out = []
    for line in lines[1:]:
        m = re.fullmatch(r"(\d+),(\d+),(\d+)", line.strip())
        if not m:
            break
        out.append((int(m[1]), int(m[2])))
    return out


def _run(board: dict, p: tuple[int, int], d: tuple[int, int], colour: str) -> int:
    """The length of the unbroken row of `colour` through p along d."""
    n = 1
    for s in (1, -1):
        q = (p[0] + s * d[0], p[1] + s * d[1])
        while board.get(q) == colour:
            n += 1
            q = (q[0] + s * d[0], q[1] + s * d[1])
    return n


def _empties_on_line(board: dict, p: tuple[int, int], d: tuple[int, int]) -> list[tuple[int, int]]:
    return [q for k in range(-5, 6) if k and 1 <= (q := (p[0] + k * d[0], p[1] + k * d[1]))[0] <= 15
            and 1 <= q[1] <= 15 and q not in board]


def _fives_through(board: dict, p: tuple[int, int], d: tuple[int, int], colour: str) -> set:
    """The empty points of the line through p that would make five or more in a row through p."""
    out = set()
    for q in _empties_on_line(board, p, d):
        board[q] = colour
        if _run(board, p, d, colour) >= 5:
            out.add(q)
        del board[q]
    return out


def _gomoku_type(board: dict, p: tuple[int, int], colour: str) -> str:
    """docs/GAMES.md's definitions, first that applies: five, four (one more stone makes five in a row in a line
    through it), three (one more stone makes an open four: a four completable to five at two points), move."""
    if any(_run(board, p, d, colour) >= 5 for d in LINES):
        return "five"
    if any(_fives_through(board, p, d, colour) for d in LINES):
        return "four"
    for d in LINES:
        for q in _empties_on_line(board, p, d):
            board[q] = colour
            open_four = len(_fives_through(board, p, d, colour)) >= 2
            del board[q]
            if open_four:
                return "three"
    return "move"


def test_psq_every_stone_is_the_files_line_and_its_shape(tmp_path_factory):
    gt = imported_case(tmp_path_factory, "gomoku", "psq", [PSQ])
    stones = _psq_stones(PSQ.read_text(encoding="ascii"))
    board, want = {}, []
    for k, (x, y) in enumerate(stones):
        colour = "black" if k % 2 == 0 else "white"
        assert (x, y) not in board
        board[(x, y)] = colour
        want.append((_gomoku_type(board, (x, y), colour), colour, f"{GOMOKU_COLUMNS[x - 1]}{16 - y}"))
    assert len(want) == 35 and want[-1][0] == "five" and {k for k, _, _ in want} == {"move", "three", "four", "five"}
    assert events(gt, "type", "actor", "where") == want


# -- doudizhu: the replay's JSON ---------------------------------------------------------------------------

SHOWDOWN = RECORDS / "doudizhu" / "rlcard-rule-v1-seed13.json"
RANKS = "3456789TJQKA2BR"


def test_rlcard_showdown_every_turn_is_the_replays_move(tmp_path_factory):
    gt = imported_case(tmp_path_factory, "doudizhu", "rlcard-showdown", [SHOWDOWN])
    doc = json.loads(SHOWDOWN.read_text(encoding="utf-8"))
    lord = next(p["index"] for p in doc["playerInfo"] if p["role"] == "landlord")
    left = [len(h.split()) for h in doc["initHands"]]
    seat = {lord: "landlord", (lord + 1) % 3: "peasant_right", (lord + 2) % 3: "peasant_left"}
    want = []
    for m in doc["moveHistory"]:
        cards = [] if m["move"] in ("pass", "") else m["move"].split()
        left[m["playerIdx"]] -= len(cards)
        ranks = "".join(sorted(({"BJ": "B", "RJ": "R"}.get(c) or c[1] for c in cards), key=RANKS.index))
        kind = ("pass" if not cards else "win" if left[m["playerIdx"]] == 0 else "rocket" if ranks == "BR"
                else "bomb" if len(ranks) == 4 and len(set(ranks)) == 1 else "play")
        want.append((kind, seat[m["playerIdx"]], ranks))
    assert len(want) == 49 and left.count(0) == 1 and want[-1][:2] == ("win", "landlord")
    assert {k for k, _, _ in want} >= {"play", "pass"}
    assert events(gt, "type", "actor", "where") == want


# -- gfootball: the dump's observations ------------------------------------------------------------------------

DUMP = RECORDS / "gfootball" / "11_vs_11_stochastic-seed77.dump.xz"
NORMAL, FREE_KICK, CORNER, PENALTY = 0, 3, 4, 6       # gfootball's e_GameMode
SIDE = ("left", "right")


def _pitch_cell(x: float, y: float) -> str:
    """docs/GAMES.md's 6x3 grid on gfootball's coordinates (x -1..1 goal line to goal line, y -0.42 top touchline
    to 0.42 bottom)."""
    return f"{min(6, max(1, int((x + 1) / 2 * 6) + 1))}{'abc'[min(2, max(0, int((y + 0.42) / 0.84 * 3)))]}"


def test_gfootball_dump_goals_set_pieces_and_shots_are_the_observations(tmp_path_factory):
    from video_arena.games.gfootball import dump as D
    from video_arena.games.gfootball.plugin import PLUGIN

    tmp = tmp_path_factory.mktemp("gfootball-dump")
    dump = tmp / "seed77.dump"
    dump.write_bytes(lzma.decompress(DUMP.read_bytes()))
    gt = imported_case(tmp_path_factory, "gfootball", "gfootball-dump", [dump])
    steps, _ = D.load_steps(dump)                 # the restricted unpickler: the file's objects, nothing derived
    obs = [s["observation"] for s in steps]
    ball = [(float(o["ball"][0]), float(o["ball"][1])) for o in obs]
    owner = [int(o["ball_owned_team"]) for o in obs]
    mode = [int(o["game_mode"]) for o in obs]
    score = [tuple(int(v) for v in o["score"]) for o in obs]
    # an event's time: the video opens with the kick-off for lead_in_s, then shows every other step (5 fps)
    lead = PLUGIN.lead_in_s

    def step_range(t: float) -> range:
        s = round((t - lead) * 10)
        return range(s, s + 2)

    got = events(gt, "t", "type", "actor", "where")
    # goals: the score's changes, credited to the side whose score rose, the ball over the goal line just before
    changes = [(i, SIDE[0 if score[i][0] > score[i - 1][0] else 1]) for i in range(1, len(obs)) if score[i] != score[i - 1]]
    goals = [(t, a, w) for t, k, a, w in got if k == "goal"]
    assert len(goals) == len(changes) == sum(score[-1]) == 1
    for (t, actor, where), (i, side) in zip(goals, changes):
        assert actor == side and i - 60 <= step_range(t)[0] <= i
        s = next(j for j in step_range(t) if abs(ball[j][0]) >= 1.0)        # the ball over the goal line
        struck = max(j for j in range(s - 40, s) if owner[j] == SIDE.index(side))
        assert where == _pitch_cell(*ball[struck]) and all(owner[j] == -1 for j in range(struck + 1, s + 1))
    # free kicks and penalties: where the game mode turns to them; the free kick's where: the ball's place then,
    # its actor: the team of the player nearest the ball when it is kicked (the mode's last step)
    for kind, code in (("free_kick", FREE_KICK), ("penalty", PENALTY), ("corner", CORNER)):
        starts = [i for i in range(1, len(obs)) if mode[i] == code != mode[i - 1]]
        mine = [(t, a, w) for t, k, a, w in got if k == kind]
        if kind == "corner":
            assert len(mine) <= len(starts)
            continue
        assert [i for i in starts if any(i in step_range(t) for t, _, _ in mine)] == starts and len(mine) == len(starts)
        for (t, actor, where), i in zip(mine, starts):
            if kind == "penalty":
                assert actor == SIDE[0 if ball[i][0] > 0 else 1] and where == ""
                continue
            j = i
            while mode[j + 1] == FREE_KICK:
                j += 1
            near = min((((px - ball[j][0]) * 54.4) ** 2 + ((py - ball[j][1]) * 83.6) ** 2, side)
                       for side in (0, 1) for px, py in obs[j][f"{SIDE[side]}_team"])
            assert actor == SIDE[near[1]] and where == _pitch_cell(*ball[i])
    assert sum(k == "free_kick" for _, k, _, _ in got) == 1
    # shots: the toolkit's strike detector is not re-derived here; each shot is a strike by the actor's team (it
    # had the ball just before and nobody has it after), from the event's cell, towards the other goal, and no
    # score change follows within 4 s
    shots = [(t, a, w) for t, k, a, w in got if k == "shot"]
    assert len(shots) == 3
    for t, actor, where in shots:
        s0, s1 = step_range(t)
        team = SIDE.index(actor)
        assert owner[s0] == team or owner[s0 - 1] == team
        assert owner[s1 + 1] == -1 and where in (_pitch_cell(*ball[s0]), _pitch_cell(*ball[s1]))
        assert (ball[s1 + 2][0] - ball[s0][0]) * (1 if team == 0 else -1) > 0
        assert score[min(len(obs) - 1, s0 + 40)] == score[s0]
    assert [t for t, *_ in got] == sorted(t for t, *_ in got) and len(got) == len(goals) + 1 + len(shots)


# -- sc2: sc2reader's tracker events ------------------------------------------------------------------------------

SC2REPLAY = RECORDS / "sc2" / "Deathaura.SC2Replay"
TOWN_HALLS = ("Nexus", "Hatchery", "Lair", "Hive", "CommandCenter", "OrbitalCommand", "PlanetaryFortress")
LOOPS_PER_S = 22.4                                  # 16 game loops a game second, Faster speed 1.4


def test_sc2replay_town_halls_fights_and_winner_are_sc2readers_tracker_events(tmp_path_factory):
    import sc2reader

    gt = imported_case(tmp_path_factory, "sc2", "sc2replay", [SC2REPLAY])
    rp = sc2reader.load_replay(str(SC2REPLAY), load_level=4)
    side = {p.pid: ("red", "blue")[k] for k, p in enumerate(sorted(rp.players, key=lambda p: p.pid))}
    gd = rp.raw_data["replay.initData"]["game_description"]
    # the grid's area (docs/GAMES.md): every recorded position, widened by 6 cells, clipped to the map
    xs, ys = [], []
    halls, hall_owner, deaths, want = {}, {}, [], []
    for e in rp.tracker_events:
        name = type(e).__name__
        if name in ("UnitBornEvent", "UnitInitEvent"):
            if e.control_pid in side or (e.frame == 0 and re.search("Mineral|Geyser|Vespene", e.unit_type_name or "")):
                xs.append(e.x), ys.append(e.y)
            if e.control_pid in side and e.unit_type_name in TOWN_HALLS:
                hall_owner[e.unit_id] = e.control_pid
                halls[e.unit_id] = (e.x, e.y)
                if e.frame > 0:
                    want.append((e.frame, 0, "expand", side[e.control_pid], (e.x, e.y)))
        elif name == "UnitPositionsEvent":
            for _, (x, y) in e.units.items():
                xs.append(x), ys.append(y)
        elif name == "UnitDiedEvent":
            if e.x is not None:
                xs.append(e.x), ys.append(e.y)
            owner = e.unit.owner.pid if e.unit.owner else None
            if e.unit_id in hall_owner and e.killer_pid in side and e.killer_pid != hall_owner[e.unit_id]:
                want.append((e.frame, 1, "base_kill", side[e.killer_pid], (e.x, e.y)))
            elif (owner in side and e.killer_pid in side and e.killer_pid != owner and not e.unit.is_building
                  and (e.unit.supply or 0) > 0):
                deaths.append((e.frame, side[owner], float(e.unit.supply), e.x, e.y))
    x0, y0 = max(0, min(xs) - 6), max(0, min(ys) - 6)
    x1, y1 = min(int(gd["map_size_x"]), max(xs) + 6), min(int(gd["map_size_y"]), max(ys) + 6)

    def cell(x, y):
        return "abcdefgh"[min(7, max(0, int((x - x0) / (x1 - x0) * 8)))] + str(min(7, max(0, int((y - y0) / (y1 - y0) * 8))) + 1)

    # fights: deaths at most 10 s apart, at least 8 supply in all; actor: the side that lost less
    chains, cur = [], []
    for d in sorted(deaths):
        if cur and d[0] - cur[-1][0] > 10 * LOOPS_PER_S:
            chains.append(cur)
            cur = []
        cur.append(d)
    chains.append(cur)
    for ch in chains:
        lost = {s: sum(d[2] for d in ch if d[1] == s) for s in ("red", "blue")}
        if sum(lost.values()) >= 8:
            assert lost["red"] != lost["blue"]
            cells = {}
            for d in ch:
                cells.setdefault(cell(d[3], d[4]), []).append(d[0])
            want.append((ch[-1][0], 2, "fight", min(lost, key=lost.get),
                         max(cells, key=lambda c: (len(cells[c]), max(cells[c])))))
    want = [(f, k, a, w if isinstance(w, str) else cell(*w)) for f, _, k, a, w in sorted(want)]
    want.append((rp.frames, "win", side[rp.winner.players[0].pid], ""))
    got = events(gt, "t", "type", "actor", "where")
    assert [(k, a, w) for _, k, a, w in got] == [(k, a, w) for _, k, a, w in want]
    assert [k for _, k, _, _ in want].count("fight") == 2 and len(want) == 9
    # times: real seconds (loops / 22.4) on the video's 1 s frames: the first frame that shows it
    for (t, *_), (loop, *_) in zip(got, want):
        assert loop / LOOPS_PER_S <= t < loop / LOOPS_PER_S + 1, (t, loop)


# -- dota2: OpenDota's JSON -----------------------------------------------------------------------------------

@pytest.mark.parametrize("match_id", [1781962623, 7490235544])
def test_opendota_every_objective_is_the_jsons_in_time_order(tmp_path_factory, match_id):
    tmp = tmp_path_factory.mktemp(f"opendota-{match_id}")
    files, docs = [], {}
    for part in ("parsed", "api"):
        f = tmp / f"{match_id}_{part}.json"
        f.write_bytes(gzip.decompress((OPENDOTA / f"{match_id}_{part}.json.gz").read_bytes()))
        files.append(f)
        docs[part] = json.loads(f.read_text(encoding="utf-8"))
    gt = imported_case(tmp_path_factory, "dota2", "opendota", files)
    parsed, api = docs["parsed"], docs["api"]
    # the video starts at the horn, or at the first ward placed before it, at most 90 s before
    wards = [w["time"] for p in parsed["players"] for k in ("obs_log", "sen_log") for w in p.get(k) or []]
    start = max(-90, min([0, *wards]))
    raw = []
    for o in parsed["objectives"]:
        if o["type"] == "CHAT_MESSAGE_ROSHAN_KILL":
            raw.append((o["time"], "roshan", {2: "radiant", 3: "dire"}[o["team"]], ""))
        elif o["type"] == "building_kill":
            m = re.fullmatch(r"npc_dota_(goodguys|badguys)_(.+)", o["key"])
            actor, building = ("dire" if m[1] == "goodguys" else "radiant"), m[2]
            if building == "fort":
                raw.append((o["time"], "ancient", actor, ""))
            elif t := re.fullmatch(r"tower([123])_(top|mid|bot)", building):
                raw.append((o["time"], "tower", actor, f"{t[2]}_t{t[1]}"))
            elif building == "tower4":
                raw.append((o["time"], "tower", actor, "base_t4"))
            elif r := re.fullmatch(r"(melee|range)_rax_(top|mid|bot)", building):
                raw.append((o["time"], "barracks", actor, f"{r[2]}_{'melee' if r[1] == 'melee' else 'ranged'}"))
            else:
                assert building.startswith("healers"), building        # shrines: not drawn, no event
    if not any(k == "ancient" for _, k, _, _ in raw):                  # the parse ends before the Ancient's fall
        raw.append((api["duration"], "ancient", "radiant" if api["radiant_win"] else "dire", ""))
    want, prev = [], None
    for time, kind, actor, where in raw:                             # one second apart when they fell together
        t = time - start if prev is None else max(time - start, prev + 1)
        want.append((t, kind, actor, where))
        prev = t
    assert want[-1][1:3] == ("ancient", "radiant" if api["radiant_win"] else "dire")
    assert len(want) == {1781962623: 16, 7490235544: 24}[match_id]
    assert gt["record"]["time_base"]["video_start_game_s"] == start
    assert events(gt, "t", "type", "actor", "where") == want
