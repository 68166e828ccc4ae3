"""import-cases without video work: log and V_t checks, coordinate rules, ids, atomicity.

Every rejection is checked for its message (naming the row) and for writing nothing: the target
tree's files are snapshotted (paths and bytes) before and compared after. The checks that need a
real video (decoding, size, length) are in tests/e2e/test_importing_e2e.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.core.tasks import load_game
from video_arena.games.base import game_names, load_definition
from video_arena.importing import cli as import_cli
from video_arena.importing.importer import values_from_series
from video_arena.importing.logs import ImportCaseError, LogRow, read_event_log, read_value_series
from video_arena.importing.rules import rule_for, where_error

pytestmark = pytest.mark.usefixtures("no_tasks_env")

BUILTIN = paths.default_tasks_root()

GOOD_CSV = """t,type,actor,where,v_before,v_after
2.0,winner,player_a,back,0.5,0.56
5.5,error,player_b,net,0.56,0.6
8.0,fault,player_a,,0.6,0.5
8.0,game,player_b,,0.5,0.3
"""


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): (b"" if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))} if root.exists() else {}


def run(tmp_path: Path, *extra: str, events: str | None = GOOD_CSV, events_name: str = "events.csv",
        values: str | None = None, values_name: str = "values.csv", game: str = "badminton",
        case_id: str | None = None) -> list[str]:
    args = ["--tasks-root", str(tmp_path / "tree"), "--game", game, "--video", str(tmp_path / "never-read.mp4"),
            "--source", "fixture", "--licence", "CC0-1.0", "--value-model", "made up"]
    if events is not None:
        (tmp_path / events_name).write_text(events)
        args += ["--events", str(tmp_path / events_name)]
    if values is not None:
        (tmp_path / values_name).write_text(values)
        args += ["--values", str(tmp_path / values_name)]
    if case_id:
        args += ["--case-id", case_id]
    return args + list(extra)


def rejected(tmp_path: Path, capsys, args: list[str], *needles: str) -> str:
    tree = tmp_path / "tree"
    before, existed = snapshot(tree), tree.exists()
    assert import_cli.main(args) == 1
    err = capsys.readouterr().err
    for n in needles:
        assert n in err, (n, err)
    assert "nothing was written" in err and err.count("\n") == 1, err
    assert snapshot(tree) == before and tree.exists() == existed, "the tree changed"
    assert "Traceback" not in err
    return err


# -- coordinate rules ---------------------------------------------------------------------------------

@pytest.mark.parametrize("game", game_names())
def test_every_game_declares_a_where_rule_for_every_type_with_a_where(game):
    gd = load_definition(game)
    for etype in gd.event_types:
        if etype not in gd.types_without_where:
            assert rule_for(gd, etype), (game, etype)


@pytest.mark.parametrize("game", ["chess", "go", "gomoku", "doudizhu"])
def test_rules_accept_every_builtin_event(game):
    gd = load_game(game, BUILTIN)
    n = 0
    for gt_path in sorted((BUILTIN / game / "gt").glob("*.json")):
        for e in json.loads(gt_path.read_text())["events"]:
            assert where_error(gd, e["type"], e["where"]) is None, (gt_path.name, e)
            n += 1
    assert n > 100


@pytest.mark.parametrize("game,etype,where", [
    ("chess", "move", "i9"), ("chess", "castle", "e1"), ("chess", "move", "e44"),
    ("go", "move", "i5"), ("go", "move", "a20"), ("go", "pass", "d4"),
    ("gomoku", "move", "Q1"), ("gomoku", "move", "A16"),
    ("doudizhu", "play", "43"), ("doudizhu", "play", "33333"), ("doudizhu", "play", "BB"), ("doudizhu", "play", "X"),
    ("cs2", "plant", "c"), ("cs2", "kill", "a"), ("cs2", "plant", ""),
    ("dota2", "tower", "mid_t4"), ("dota2", "barracks", "top_t1"), ("dota2", "roshan", "pit"),
    ("sc2", "fight", "i1"), ("sc2", "expand", "a9"), ("sc2", "win", "a1"),
    ("gfootball", "shot", "7b"), ("gfootball", "goal", "b5"), ("gfootball", "corner", "1a"),
    ("badminton", "winner", "net"), ("badminton", "error", "back"), ("badminton", "game", "mid"),
])
def test_rules_reject(game, etype, where):
    assert where_error(load_game(game, BUILTIN), etype, where) is not None


@pytest.mark.parametrize("game,etype,where", [
    ("cs2", "plant", "a"), ("cs2", "explode", "B"), ("cs2", "kill", ""), ("dota2", "tower", "base_t4"),
    ("dota2", "barracks", "bot_ranged"), ("sc2", "fight", "h8"), ("gfootball", "free_kick", "6c"),
    ("badminton", "error", "out"), ("doudizhu", "play", "TJQKA"), ("doudizhu", "play", "BR"),
])
def test_rules_accept(game, etype, where):
    assert where_error(load_game(game, BUILTIN), etype, where) is None


# -- V_t series -> v_before / v_after -------------------------------------------------------------------

def rows_at(*ts):
    return [LogRow(f"log row {i}", float(t), "winner", "player_a", "back") for i, t in enumerate(ts, 1)]


def series(*pts):
    return [(f"v row {i}", float(t), float(v)) for i, (t, v) in enumerate(pts, 1)]


def test_series_aligned_with_shared_times():
    got = values_from_series(rows_at(2, 8, 8), series((0, .5), (2, .6), (8, .55), (8, .3)))
    assert got == [(.5, .6), (.6, .55), (.55, .3)]


def test_series_one_point_for_two_events_and_drift_between_events():
    got = values_from_series(rows_at(2, 8, 8), series((0, .5), (1, .52), (2, .6), (5, .58), (8, .3)))
    assert got == [(.52, .6), (.58, .3), (.3, .3)]


def test_series_event_at_zero():
    assert values_from_series(rows_at(0), series((0, .5), (0, .7))) == [(.5, .7)]


@pytest.mark.parametrize("pts,msg", [
    (((1, .5), (2, .6)), "must start at t=0"),
    (((0, .5), (3, .6)), "log row 1: the V_t series has no point at t=2"),
    (((0, .5), (2, .6), (1, .6)), "v row 3: t 1.0 is earlier"),
])
def test_series_errors(pts, msg):
    with pytest.raises(ImportCaseError, match=msg):
        values_from_series(rows_at(2), series(*pts))


def test_series_too_many_points_at_one_time():
    with pytest.raises(ImportCaseError, match=r"1 event\(s\) at t=2.0 but 3 V_t points there \(need 1\)"):
        values_from_series(rows_at(2), series((0, .5), (2, .6), (2, .7), (2, .8)))


def series_rule(rows, pts):
    """docs/IMPORTING.md's rule, word for word and without regard to cost: for the events at each time T,
    v_before is the last point before T (at T = 0, the first point at 0), and the points at T are taken in
    order when there are as many as events, else the one point goes to the first event."""
    out, i = [], 0
    while i < len(rows):
        T = rows[i].t
        group = [r for r in rows[i:] if r.t == T]
        at = [p for p in pts if p[1] == T]
        before = [p for p in pts if p[1] < T]
        if not before:
            before, at = at[:1], at[1:]
        if not at:
            return f"no point at t={T}"
        vb = before[-1][2]
        if len(at) == len(group):
            for p in at:
                out.append((vb, p[2]))
                vb = p[2]
        elif len(at) == 1:
            out += [(vb, at[0][2])] + [(at[0][2], at[0][2])] * (len(group) - 1)
        else:
            return f"{len(group)} event(s) at t={T} but {len(at)} V_t points there"
        i += len(group)
    return out


class Counted(list):
    """A list that counts every element read from it (by index, slice or iteration)."""

    reads = 0

    def __getitem__(self, k):
        got = super().__getitem__(k)
        Counted.reads += len(got) if isinstance(k, slice) else 1
        return got

    def __iter__(self):
        for x in super().__iter__():
            Counted.reads += 1
            yield x


def test_series_values_follow_the_rule_reading_each_row_and_point_a_bounded_number_of_times():
    """Random logs and series on a coarse time grid (shared times, drift points, missing and surplus points)
    give what the rule gives, and the events and points are read O(rows + points) times in all: 20,000
    events with a 20,000-point series once took a minute (every time group scanned the whole series)."""
    import random

    rng = random.Random(36)
    for _ in range(300):
        ts = sorted(rng.choice(range(12)) for _ in range(rng.randint(1, 8)))
        pts = [(0, .5)] + sorted((rng.choice(range(13)), round(rng.random(), 2)) for _ in range(rng.randint(0, 14)))
        rows, pts = rows_at(*ts), series(*pts)
        want = series_rule(rows, pts)
        if isinstance(want, str):
            with pytest.raises(ImportCaseError) as exc:
                values_from_series(rows, pts)
            assert want in str(exc.value)
        else:
            assert values_from_series(rows, pts) == want
    n = 1000
    rows, pts = Counted(rows_at(*range(1, n + 1))), Counted(series((0, .5), *((t, .5) for t in range(1, n + 1))))
    Counted.reads = 0
    assert len(values_from_series(rows, pts)) == n
    assert Counted.reads <= 10 * (len(rows) + len(pts)), Counted.reads


# -- log formats --------------------------------------------------------------------------------------

def test_csv_and_json_logs_read_the_same(tmp_path):
    (tmp_path / "a.csv").write_text(GOOD_CSV)
    rows = [{"t": 2.0, "type": "winner", "actor": "player_a", "where": "back", "v_before": .5, "v_after": .56}]
    (tmp_path / "b.json").write_text(json.dumps({"events": rows}))
    a, b = read_event_log(tmp_path / "a.csv")[0], read_event_log(tmp_path / "b.json")[0]
    assert (a.t, a.type, a.actor, a.where, a.v_before, a.v_after) == (b.t, b.type, b.actor, b.where, b.v_before, b.v_after)
    assert a.label == "a.csv line 2" and b.label == "b.json row 1"
    (tmp_path / "v.json").write_text(json.dumps({"v_series": [[0, .5], {"t": 2, "v": .6}]}))
    assert [x[1:] for x in read_value_series(tmp_path / "v.json")] == [(0.0, .5), (2.0, .6)]


# -- rejections: message names the row, nothing written ------------------------------------------------

BAD_LOGS = [
    ("unknown type", GOOD_CSV.replace("2.0,winner", "2.0,smash"), "events.csv line 2: unknown type 'smash'"),
    ("unknown actor", GOOD_CSV.replace("5.5,error,player_b", "5.5,error,player_c"), "events.csv line 3: unknown actor 'player_c'"),
    ("bad where", GOOD_CSV.replace("player_a,back", "player_a,deep"), "events.csv line 2: where 'deep' does not fit"),
    ("where on a type without", GOOD_CSV.replace("fault,player_a,", "fault,player_a,net"), "events.csv line 4: type 'fault' has no where"),
    ("missing where", GOOD_CSV.replace("player_a,back", "player_a,"), "events.csv line 2: type 'winner' needs a where"),
    ("before 0", GOOD_CSV.replace("2.0,winner", "-1.0,winner"), "events.csv line 2: t -1.0 is before the start"),
    ("out of order", GOOD_CSV.replace("5.5,error", "1.5,error"), "events.csv line 3: t 1.5 is earlier"),
    ("V out of range", GOOD_CSV.replace("0.56,0.6", "0.56,1.6"), "events.csv line 3: v_after: V_t 1.6 is outside"),
    ("V not finite", GOOD_CSV.replace("0.56,0.6", "0.56,nan"), "events.csv line 3: 'v_after' must be finite"),
    ("V inf", GOOD_CSV.replace("0.56,0.6", "0.56,inf"), "events.csv line 3: 'v_after' must be finite"),
    ("V not a number", GOOD_CSV.replace("0.56,0.6", "0.56,high"), "events.csv line 3: 'v_after' must be a number"),
    ("no values", GOOD_CSV.replace("0.56,0.6", ","), "events.csv line 3: no v_before/v_after"),
    ("extra field", GOOD_CSV.replace("2.0,winner,player_a,back,0.5,0.56", "2.0,winner,player_a,back,0.5,0.56,x"),
     "events.csv line 2: more fields than the header"),
    ("empty", "t,type,actor,where\n", "the log has no events"),
    ("unknown column", GOOD_CSV.replace("v_after\n", "v_after,score\n").replace("\n2.0", "\n2.0").replace("0.56\n", "0.56,3\n", 1),
     "unknown field(s) ['score']"),
]


@pytest.mark.parametrize("name,log,msg", BAD_LOGS, ids=[b[0] for b in BAD_LOGS])
def test_bad_csv_log_rejected(tmp_path, capsys, name, log, msg):
    rejected(tmp_path, capsys, run(tmp_path, events=log), msg)


def with_state(delta_state: list[tuple[str, str]]) -> str:
    lines = GOOD_CSV.splitlines()
    out = [lines[0] + ",delta,state"] + [f"{ln},{d},{s}" for ln, (d, s) in zip(lines[1:], delta_state)]
    return "\n".join(out) + "\n"


RIGHT = [("up", "player_a"), ("up", "player_a"), ("down", "even"), ("down", "player_b")]   # at badminton's band (0.03)


def test_given_delta_and_state_are_checked(tmp_path, capsys):
    bad = list(RIGHT)
    bad[1] = ("flat", "player_a")
    rejected(tmp_path, capsys, run(tmp_path, events=with_state(bad)),
             f"events.csv line 3: delta 'flat' disagrees with V_t 0.56 -> 0.6 (band {load_definition('badminton').band:g}",
             "it is 'up'")
    bad = list(RIGHT)
    bad[2] = ("down", "player_b")
    rejected(tmp_path, capsys, run(tmp_path, events=with_state(bad)), "events.csv line 4: state 'player_b' disagrees")
    bad[2] = ("down", "nobody")
    rejected(tmp_path, capsys, run(tmp_path, events=with_state(bad)), "events.csv line 4: unknown state 'nobody'")
    bad[2] = ("sideways", "even")
    rejected(tmp_path, capsys, run(tmp_path, events=with_state(bad)), "events.csv line 4: unknown delta 'sideways'")


def test_json_log_rejections(tmp_path, capsys):
    row = {"t": 2.0, "type": "winner", "actor": "player_a", "where": "back", "v_before": 0.5, "v_after": 0.6}
    for patch, msg in [({"t": "2s"}, "events.json row 1: 't' must be a number"),
                       ({"v_after": True}, "events.json row 1: 'v_after' must be a number"),
                       ({"actor": 3}, "events.json row 1: 'actor' must be a string"),
                       ({"where": None}, "events.json row 1: 'where' is missing")]:
        rejected(tmp_path, capsys, run(tmp_path, events=json.dumps([row | patch]), events_name="events.json"), msg)
    rejected(tmp_path, capsys, run(tmp_path, events='[{"t": NaN}]', events_name="events.json"), "not valid JSON")
    rejected(tmp_path, capsys, run(tmp_path, events='{"rows": []}', events_name="events.json"), "needs a 'events' list")


def test_two_logs_disagreeing(tmp_path, capsys):
    values = "t,v\n0,0.5\n2,0.56\n5.5,0.61\n8,0.5\n8,0.3\n"
    rejected(tmp_path, capsys, run(tmp_path, values=values),
             "events.csv line 3: the two logs disagree: v_after is 0.6 here and 0.61 in values.csv")


def test_values_series_rejections(tmp_path, capsys):
    log = "t,type,actor,where\n2.0,winner,player_a,back\n"
    rejected(tmp_path, capsys, run(tmp_path, events=log, values="t,v\n0,0.5\n2,1.01\n"), "values.csv line 3: V_t 1.01 is outside")
    rejected(tmp_path, capsys, run(tmp_path, events=log, values="t,v\n0,0.5\n2,-inf\n"), "values.csv line 3: 'v' must be finite")
    rejected(tmp_path, capsys, run(tmp_path, events=log, values="t,v\n0,0.5\n3,0.6\n"), "events.csv line 2: the V_t series has no point at t=2.0")
    rejected(tmp_path, capsys, run(tmp_path, events=log, values="t,v\n0,0.5\n-1,0.6\n2,0.6\n"), "values.csv line 3: t -1.0 is before the start")
    rejected(tmp_path, capsys, run(tmp_path, events=log, values="t,v,w\n0,0.5,1\n"), "values.csv line 2: unknown field(s) ['w']")


def test_case_id_and_provenance_rejections(tmp_path, capsys):
    rejected(tmp_path, capsys, run(tmp_path, case_id="short"), "case id 'short' must be 8 characters")
    rejected(tmp_path, capsys, run(tmp_path, case_id="abcd-efg"), "case id 'abcd-efg' must be 8 characters")
    args = run(tmp_path)
    args[args.index("--licence") + 1] = "  "
    rejected(tmp_path, capsys, args, "--licence must not be empty")
    rejected(tmp_path, capsys, run(tmp_path, game="tennis"), "unknown game 'tennis'")
    rejected(tmp_path, capsys, run(tmp_path, game="../chess"), "game name '../chess' must match")


def badminton_tree_with_case_taken123(tmp_path):
    """A tasks tree whose badminton folder holds the game's files and lists one case, Taken123."""
    tree = tmp_path / "tree" / "badminton"
    (tree / "gt").mkdir(parents=True)
    for name, data in __import__("video_arena.games.cli", fromlist=["expected_files"]).expected_files("badminton").items():
        (tree / name).write_bytes(data)
    (tree / "cases.json").write_text(json.dumps({"game": "badminton", "cases": [
        {"case_id": "Taken123", "duration_s": 1.0, "n_events": 1, "source": {}}]}))
    return tree


def test_existing_case_id_needs_replace(tmp_path, capsys):
    badminton_tree_with_case_taken123(tmp_path)
    rejected(tmp_path, capsys, run(tmp_path, case_id="Taken123"), "case badminton/Taken123 already exists", "--replace")
    # with --replace the id check passes and the (missing) video is the next error: still nothing written
    rejected(tmp_path, capsys, run(tmp_path, "--replace", case_id="Taken123"), "never-read.mp4: no such file")


def test_cli_usage_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        import_cli.main(["--tasks-root", str(tmp_path), "--game", "cs2", "--source", "s", "--licence", "l",
                         "--value-model", "m"])
    assert exc.value.code == 2
    assert "needs --game, --video and --events" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        import_cli.main(["--game", "cs2", "--video", "v", "--events", "e", "--source", "s", "--licence", "l",
                         "--value-model", "m"])
    assert "--tasks-root" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        import_cli.main(["--tasks-root", str(tmp_path), "--game", "cs2", "--video", "v", "--events", "e",
                         "--source", "s", "--licence", "l"])
    assert "--value-model" in capsys.readouterr().err


def test_the_bounds_docs_importing_states_are_the_codes():
    """docs/IMPORTING.md's table of bounds says what the code holds an input to."""
    from video_arena import safe_io
    from video_arena.importing import logs, media
    from video_arena.media import container

    doc = paths.repo_resource("docs", "IMPORTING.md").read_text(encoding="utf-8")
    for text in (f"| event log, V_t series, source-tree JSON file | {logs.MAX_LOG_BYTES >> 20} MB; JSON nested at most "
                 f"{safe_io.MAX_JSON_DEPTH} levels, integers of at most {safe_io.MAX_JSON_INT_DIGITS} digits",
                 f"| video | {container.MAX_VIDEO_BYTES >> 30} GiB, {media.MAX_VIDEO_S // 3600} hours, "
                 f"{media.MAX_SIDE} pixels a side"):
        assert text in doc, text


def test_a_tree_whose_cases_were_made_under_another_game_version_is_refused(tmp_path, capsys):
    tree = badminton_tree_with_case_taken123(tmp_path)
    manifest = {"format": "video-arena-cases-manifest/1", "game": "badminton", "game_version": 7, "n_cases": 1,
                "cases": [{"case_id": "Taken123"}]}
    (tree / "manifest.json").write_text(json.dumps(manifest))
    rejected(tmp_path, capsys, run(tmp_path), "its cases were made under badminton version 7",
             "the definition is version 1", "one tree holds one version of a game")
    # the same version (or a manifest of no cases yet) is no refusal: the next error is the missing video
    (tree / "manifest.json").write_text(json.dumps(dict(manifest, game_version=1)))
    rejected(tmp_path, capsys, run(tmp_path), "never-read.mp4: no such file")
