"""import-cases end to end with real videos (ffmpeg test sources made here, clearly fixtures).

- an external tree with one case for each of the five games without built-in cases, through every
  input route (CSV/JSON logs, values in the log or in a separate series, remux and re-encode, an
  audio track, a larger source scaled down, another container);
- every bad video input rejected with its message and nothing written (also inside a --from-tree
  import where only one case of several is bad);
- --from-tree on a seed-layout copy of that tree reproduces its ground truth;
- round trip: a built-in case's own video and event log import back to the same ground truth;
- the rest of the toolkit on the imported tree: make-harbor, validate, score of an oracle run.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from video_arena import paths
from video_arena.core.tasks import load_cases
from video_arena.importing import cli as import_cli
from video_arena.core.judge_loader import load_judge
from video_arena.digests import sha256_bytes

from scoring_helpers import runner_digests

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_tasks_env")]

PROV = ["--source", "synthetic test fixture (ffmpeg testsrc2), not a real match", "--licence", "CC0-1.0",
        "--value-model", "hand-written numbers (fixture)"]
FIXTURE_GAMES = ("cs2", "dota2", "sc2", "gfootball", "badminton")


def ffmpeg_source(path: Path, size: str, rate: str, seconds: float, *extra: str, audio: bool = False) -> Path:
    cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate={rate}"]
    if audio:
        cmd += ["-f", "lavfi", "-i", "sine=frequency=440"]
    cmd += ["-t", str(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", *extra]
    if audio:
        cmd += ["-c:a", "aac", "-shortest"]
    subprocess.run(cmd + [str(path)], check=True)
    return path


def write_csv(path: Path, header: str, rows: list[tuple]) -> Path:
    path.write_text(header + "\n" + "".join(",".join(str(x) for x in r) + "\n" for r in rows))
    return path


def fixture_inputs(d: Path) -> dict[str, dict]:
    """Videos and logs for one case of each of the five games (synthetic: test patterns, made-up events)."""
    d.mkdir(parents=True, exist_ok=True)
    out: dict[str, dict] = {}
    # CS2: 1920x1080 H.264 at 2 fps (remux), JSON log with values and delta/state given
    ev = [(3.0, "kill", "team_a", "", .5, .52), (6.5, "kill", "team_b", "", .52, .5), (9.0, "plant", "team_b", "a", .5, .44),
          (14.0, "defuse", "team_a", "a", .44, .6), (14.0, "round_win", "team_a", "", .6, .64)]
    rows = [{"t": t, "type": ty, "actor": a, "where": w, "v_before": vb, "v_after": va} for t, ty, a, w, vb, va in ev]
    (d / "cs2.json").write_text(json.dumps({"events": rows}))
    out["cs2"] = {"video": ffmpeg_source(d / "cs2.mp4", "1920x1080", "2", 18), "events": d / "cs2.json", "n": 5}
    # DOTA 2: 1024x1024 at 4 fps with audio (scaled down, re-encoded at --fps 2), CSV log + JSON V_t series
    write_csv(d / "dota2.csv", "t,type,actor,where", [(2.5, "roshan", "radiant", ""), (5.0, "tower", "dire", "bot_t1"),
                                                     (9.0, "barracks", "radiant", "mid_melee"), (12.0, "roshan", "dire", ""),
                                                     (15.0, "ancient", "radiant", "")])
    (d / "dota2-values.json").write_text(json.dumps({"v_series": [[0, .5], [2.5, .53], [5, .47], [7, .49], [9, .58],
                                                                   [12, .52], [15, 1.0]]}))
    out["dota2"] = {"video": ffmpeg_source(d / "dota2.mp4", "1024x1024", "4", 16, audio=True),
                    "events": d / "dota2.csv", "values": d / "dota2-values.json", "fps": "2", "n": 5}
    # StarCraft II: 1536x1536 at 4 fps, times off the frame grid (snapped), CSV values series with drift
    write_csv(d / "sc2.csv", "t,type,actor,where", [(2.1, "expand", "red", "b2"), (4.6, "expand", "blue", "g7"),
                                                   (8.3, "fight", "blue", "e4"), (11.0, "base_kill", "blue", "b2"),
                                                   (11.0, "win", "blue", "")])
    write_csv(d / "sc2-values.csv", "t,v", [(0, .5), (2.1, .51), (4.6, .5), (6, .46), (8.3, .3), (11, .1), (11, 0)])
    out["sc2"] = {"video": ffmpeg_source(d / "sc2.mp4", "1536x1536", "4", 14), "events": d / "sc2.csv",
                  "values": d / "sc2-values.csv", "n": 5}
    # Google Research Football: Matroska at 3 fps (re-encoded, frame rate kept)
    write_csv(d / "gfootball.csv", "t,type,actor,where,v_before,v_after,delta,state",
              [(2.0, "shot", "left", "5b", .5, .53, "flat", "even"), (4.5, "corner", "left", "", .53, .54, "flat", "even"),
               (7.0, "goal", "right", "2b", .54, .3, "down", "right"), (9.5, "free_kick", "left", "4a", .3, .31, "flat", "right"),
               (12.0, "penalty", "left", "", .31, .4, "up", "right")])
    out["gfootball"] = {"video": ffmpeg_source(d / "gfootball.mkv", "1280x720", "3", 13), "events": d / "gfootball.csv", "n": 5}
    # Badminton: 1280x720 at 2 fps with an audio track (remux, audio dropped)
    write_csv(d / "badminton.csv", "t,type,actor,where,v_before,v_after",
              [(2.0, "winner", "player_a", "back", .5, .56), (5.5, "error", "player_b", "net", .56, .6),
               (8.0, "fault", "player_a", "", .6, .5), (11.0, "winner", "player_b", "front", .5, .42),
               (11.0, "game", "player_b", "", .42, .3)])
    out["badminton"] = {"video": ffmpeg_source(d / "badminton.mp4", "1280x720", "2", 14, audio=True),
                        "events": d / "badminton.csv", "n": 5}
    return out


def import_args(tree: Path, game: str, spec: dict, *extra: str) -> list[str]:
    args = ["--tasks-root", str(tree), "--game", game, "--video", str(spec["video"]), "--events", str(spec["events"]), *PROV]
    if spec.get("values"):
        args += ["--values", str(spec["values"])]
    if spec.get("fps"):
        args += ["--fps", spec["fps"]]
    return args + list(extra)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): (b"" if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))} if root.exists() else {}


def probe(path: Path) -> dict:
    out = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, dict]:
    return fixture_inputs(tmp_path_factory.mktemp("inputs"))


@pytest.fixture(scope="module")
def tree(tmp_path_factory, inputs) -> Path:
    root = tmp_path_factory.mktemp("ext") / "tree"
    for game in FIXTURE_GAMES:
        assert import_cli.main(import_args(root, game, inputs[game])) == 0, game
    return root


def test_five_games_imported(tree, inputs):
    J = load_judge()
    seen = {}
    for game in FIXTURE_GAMES:
        cases = load_cases(game, tree)
        assert len(cases) == 1
        cid = cases[0]["case_id"]
        assert cases[0]["source"] == {"collection": "imported"}  # nothing about the match in cases.json
        gt = J.load_gt(tree / game / "gt" / f"{cid}.json")
        assert len(gt["events"]) == inputs[game]["n"]
        media = tree / game / "media" / f"{cid}.mp4"
        streams = probe(media)["streams"]
        assert [s["codec_type"] for s in streams] == ["video"], "audio must be dropped"
        v = streams[0]
        assert (v["width"], v["height"]) == tuple(gt["video"][k] for k in ("width", "height"))
        assert v["r_frame_rate"] == v["avg_frame_rate"] == f"{gt['video']['fps']}/1"
        assert int(v["nb_frames"]) == gt["video"]["n_frames"]
        manifest = json.loads((tree / game / "manifest.json").read_text())
        entry = next(e for e in manifest["cases"] if e["case_id"] == cid)
        from video_arena.digests import sha256_file
        assert entry["media_sha256"] == sha256_file(media) and entry["gt_sha256"] == sha256_file(tree / game / "gt" / f"{cid}.json")
        assert entry["licence"] == "CC0-1.0" and entry["evaluator"] == {"value_model": "hand-written numbers (fixture)"}
        seen[game] = (gt, entry)
    assert seen["cs2"][1]["imported"]["video"]["method"] == "remux"
    assert seen["badminton"][1]["imported"]["video"]["method"] == "remux"
    assert seen["dota2"][1]["imported"]["video"]["method"] == "re-encode"
    assert seen["dota2"][0]["video"] == {"fps": 2, "n_frames": 32, "width": 512, "height": 512}
    assert seen["gfootball"][0]["video"]["fps"] == 3
    # derived delta/state and the V_t series rules
    cs2 = seen["cs2"][0]["events"]
    assert [(e["delta"], e["state"]) for e in cs2] == [("flat", "even"), ("flat", "even"), ("down", "team_b"),
                                                       ("up", "team_a"), ("up", "team_a")]
    dota = seen["dota2"][0]["events"]
    assert [(e["v_before"], e["v_after"]) for e in dota] == [(.5, .53), (.53, .47), (.49, .58), (.58, .52), (.52, 1.0)]
    sc2 = seen["sc2"][0]["events"]
    assert [e["t"] for e in sc2] == [2.0, 4.5, 8.25, 11.0, 11.0]  # snapped to the 4 fps grid
    assert seen["sc2"][1]["imported"]["max_time_snap_s"] == pytest.approx(0.1)
    assert [(e["v_before"], e["v_after"], e["state"]) for e in sc2][-2:] == [(.3, .1, "blue"), (.1, 0.0, "blue")]


def test_existing_id_and_replace(tree, inputs, capsys):
    cid = load_cases("badminton", tree)[0]["case_id"]
    before = snapshot(tree)
    assert import_cli.main(import_args(tree, "badminton", inputs["badminton"], "--case-id", cid)) == 1
    assert f"case badminton/{cid} already exists" in capsys.readouterr().err
    assert snapshot(tree) == before
    other = tree.parent / "replace-copy"
    shutil.copytree(tree, other)
    assert import_cli.main(import_args(other, "badminton", inputs["badminton"], "--case-id", cid, "--replace")) == 0
    assert [c["case_id"] for c in load_cases("badminton", other)] == [cid]
    assert json.loads((other / "badminton" / "manifest.json").read_text())["n_cases"] == 1


@pytest.fixture(scope="module")
def bad_videos(tmp_path_factory, inputs) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bad")
    good = inputs["cs2"]["video"].read_bytes()
    (d / "garbage.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 64)
    (d / "truncated.mp4").write_bytes(good[: len(good) // 2])
    corrupt = bytearray(ffmpeg_source(d / "fragile.mp4", "1920x1080", "2", 18, "-movflags", "+faststart").read_bytes())
    mid = len(corrupt) // 2
    corrupt[mid:mid + 20000] = bytes(20000)
    (d / "corrupt.mp4").write_bytes(bytes(corrupt))
    ffmpeg_source(d / "small.mp4", "1280x720", "2", 18)
    ffmpeg_source(d / "wide.mp4", "2000x1080", "2", 18)
    ffmpeg_source(d / "short.mp4", "1920x1080", "2", 10)
    return {p.stem: p for p in d.glob("*.mp4")}


@pytest.mark.parametrize("video,msg", [
    ("garbage", "does not decode"), ("truncated", "does not decode"), ("corrupt", "does not decode"),
    ("small", "is 1280x720, smaller than the game's render size 1920x1080"),
    ("wide", "crop the footage to that aspect first"),
    ("short", "cs2.json row 4: t 14.0 is after the end of the video (10.0 s"),
])
def test_bad_video_rejected(tree, inputs, bad_videos, capsys, video, msg):
    before = snapshot(tree)
    spec = dict(inputs["cs2"], video=bad_videos[video])
    assert import_cli.main(import_args(tree, "cs2", spec)) == 1
    err = capsys.readouterr().err
    assert msg in err and "nothing was written" in err and "Traceback" not in err
    assert snapshot(tree) == before


def test_values_longer_than_video_rejected(tree, inputs, tmp_path, capsys):
    vals = tmp_path / "long.csv"
    write_csv(vals, "t,v", [(0, .5), (2.1, .51), (4.6, .5), (8.3, .3), (11, .1), (11, 0), (30, 0)])
    before = snapshot(tree)
    assert import_cli.main(import_args(tree, "sc2", dict(inputs["sc2"], values=vals))) == 1
    assert "long.csv line 8: t 30.0 is after the end of the video" in capsys.readouterr().err
    assert snapshot(tree) == before


def seed_layout(tree: Path, out: Path, with_values: str) -> Path:
    """A copy of `tree` in the seed's layout: rows in the answer schema (+ values), media, instruction, seed."""
    for game in FIXTURE_GAMES:
        g = out / game
        (g / "gt").mkdir(parents=True)
        (g / "media").mkdir()
        for name in ("instruction.md", "answer_seed.json"):
            shutil.copy(tree / game / name, g / name)
        for c in load_cases(game, tree):
            gt = json.loads((tree / game / "gt" / f"{c['case_id']}.json").read_text())
            keep = ("t", "type", "actor", "where", "delta", "state") + (("v_before", "v_after") if with_values == "rows" else ())
            doc = {"events": [{k: e[k] for k in keep} for e in gt["events"]]}
            if with_values == "series":
                doc["v_series"] = gt["v_series"]
            (g / "gt" / f"{c['case_id']}.json").write_text(json.dumps(doc))
            shutil.copy(tree / game / "media" / f"{c['case_id']}.mp4", g / "media")
    return out


def test_from_tree_round_trip(tree, tmp_path, capsys):
    src = seed_layout(tree, tmp_path / "seed", "rows")
    (src / "cs2" / "instruction.md").write_text("a different instruction\n")
    dst = tmp_path / "dst"
    assert import_cli.main(["--from-tree", str(src), "--tasks-root", str(dst), *PROV]) == 0
    out = capsys.readouterr().out
    assert "cs2/instruction.md: differs from the toolkit's; the toolkit's is kept" in out
    assert "format None, not 'video-arena-gt/1': converted" in out
    for game in FIXTURE_GAMES:
        for c in load_cases(game, tree):
            a = json.loads((tree / game / "gt" / f"{c['case_id']}.json").read_text())
            b = json.loads((dst / game / "gt" / f"{c['case_id']}.json").read_text())
            assert a["events"] == b["events"] and a["video"] == b["video"] and a["duration_s"] == b["duration_s"]
        assert (dst / game / "instruction.md").read_bytes() == (tree / game / "instruction.md").read_bytes()


def test_from_tree_one_bad_case_writes_nothing(tree, tmp_path, capsys):
    src = seed_layout(tree, tmp_path / "seed", "series")
    gt_path = next((src / "sc2" / "gt").glob("*.json"))
    doc = json.loads(gt_path.read_text())
    doc["events"][2]["state"] = "red"  # V_t says blue
    gt_path.write_text(json.dumps(doc))
    dst = tmp_path / "dst"
    dst.mkdir()
    assert import_cli.main(["--from-tree", str(src), "--tasks-root", str(dst), *PROV]) == 1
    err = capsys.readouterr().err
    assert f"{gt_path.name} row 3: state 'red' disagrees" in err
    assert snapshot(dst) == {}
    # rows without values and no v_series cannot be checked against the band: refused
    src2 = seed_layout(tree, tmp_path / "seed2", "none")
    assert import_cli.main(["--from-tree", str(src2), "--tasks-root", str(dst), *PROV]) == 1
    assert "no v_before/v_after, and no V_t series" in capsys.readouterr().err
    assert snapshot(dst) == {}


def shortest_builtin_case_with_media() -> tuple[str, str] | None:
    """The shortest built-in case whose rendered media is there (and has the manifest's size)."""
    root = paths.default_tasks_root()
    found = []
    for game in ("chess", "go", "gomoku", "doudizhu"):
        if not (root / game / "manifest.json").is_file():
            continue
        sizes = {e["case_id"]: e.get("media_bytes") for e in json.loads((root / game / "manifest.json").read_text())["cases"]}
        for c in load_cases(game, root):
            m = root / game / "media" / f"{c['case_id']}.mp4"
            if m.is_file() and m.stat().st_size == sizes.get(c["case_id"]):
                found.append((c["duration_s"], game, c["case_id"]))
    return min(found)[1:] if found else None


@pytest.mark.parametrize("mode", ["log values", "separate series"])
def test_round_trip_of_a_builtin_case(tmp_path, mode):
    found = shortest_builtin_case_with_media()
    root = paths.default_tasks_root()
    if found:
        game, cid = found
        video = root / game / "media" / f"{cid}.mp4"
    else:  # a clean clone has no media: render the shortest doudizhu case from its committed gt
        from video_arena.cases import build as B

        game = "doudizhu"
        cid = min(load_cases(game, root), key=lambda c: c["duration_s"])["case_id"]
        res = B.build_game(game, root, tmp_path / "media-root", media_only=True, only={cid}, jobs=1)
        assert res and res[0]["media_matches_manifest"]
        video = tmp_path / "media-root" / game / "media" / f"{cid}.mp4"
    gt = json.loads((root / game / "gt" / f"{cid}.json").read_text())
    keep = ("t", "type", "actor", "where") + (("v_before", "v_after") if mode == "log values" else ())
    log = tmp_path / f"{game}.json"
    log.write_text(json.dumps([{k: e[k] for k in keep} for e in gt["events"]]))
    args = ["--tasks-root", str(tmp_path / "tree"), "--game", game, "--video", str(video),
            "--events", str(log), "--case-id", cid, *PROV]
    if mode == "separate series":
        (tmp_path / f"{game}-v.csv").write_text("t,v\n" + "".join(f"{t},{v}\n" for t, v in gt["v_series"]))
        args += ["--values", str(tmp_path / f"{game}-v.csv")]
    assert import_cli.main(args) == 0
    back = json.loads((tmp_path / "tree" / game / "gt" / f"{cid}.json").read_text())
    assert back["events"] == gt["events"], game
    for key in ("spec", "duration_s", "v_series", "video", "v_definition", "format", "case_id", "game"):
        assert back[key] == gt[key], (game, key)


def test_toolkit_on_the_imported_tree(tree, tmp_path, capsys):
    """make-harbor, validate and score (oracle answers) work on the imported tree unchanged."""
    from video_arena.harbor import generate, validate
    from video_arena.scoring import cli as score_cli

    ds = tmp_path / "ds"
    assert generate.main(["--out", str(ds), "--tasks-root", str(tree), "--no-progress"]) == 0
    assert validate.main([str(ds), "--tasks-root", str(tree), "--no-progress", "--no-compose"]) == 0
    J = load_judge()
    res = tmp_path / "results"
    for game in FIXTURE_GAMES:
        for c in load_cases(game, tree):
            cell = res / game / c["case_id"]
            cell.mkdir(parents=True)
            gt = J.load_gt(tree / game / "gt" / f"{c['case_id']}.json")
            answer = json.dumps(J.oracle_answer(gt)).encode()
            (cell / "answer.json").write_bytes(answer)
            # a record as run-b writes it: every digest it always writes (stand-ins but the answer's own)
            (cell / "run.json").write_text(json.dumps({"protocol": "B", "model": "oracle", "game": game,
                                                       "case_id": c["case_id"], "stop_reason": "completed",
                                                       "answer_state": "wrote", **runner_digests("B"),
                                                       "answer_sha256": sha256_bytes(answer)}))
    capsys.readouterr()
    assert score_cli.main([str(res), "--tasks-root", str(tree), "--bootstrap", "0", "--quiet"]) == 0
    out = capsys.readouterr().out
    for game in FIXTURE_GAMES:
        assert game in out
    assert "1.000" in out
