"""What the video shows: T1 visibility and the visible ceiling, for every game with a pixel reader.

The game's reader (video_arena/games/<game>/reader.py, the one the perception agent runs in its sandbox)
runs here on each case's video, in a process of its own per case; it returns its answer rows and, per
row, the visible state it recovered. The game's plugin turns those states into V_t
(`visible_values`: from visible features only, value t from the states up to t), and the case's answer
is the reader's rows with `delta` and `state` from those values, rounded and labelled as the ground
truth's are. That answer, judged like any other, is the **visible ceiling**: what a perfect watcher of
the video, computing V_t as the game defines it from what the picture shows, scores. Its T1 is the
reader's, and **T1 visibility** is the same judge's matches counted per game and event type (recall:
ground-truth events of the type matched; precision: rows of the type matched).

Each cell records the digest of its inputs (cell_inputs.py), per game: the case's task files, the shared
helpers and every source file of the game's folder (reader, plugin, engine), the evaluator's identity,
this module and the judge. Nothing here names a game: a game gains its rows by having a reader.
"""
from __future__ import annotations

import json
import math
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from video_arena import safe_io
from video_arena.baselines import cell_inputs as CI
from video_arena.cases.build import VALUE_DECIMALS
from video_arena.core import results as R
from video_arena.core import tasks as T
from video_arena.core.judge_loader import load_judge
from video_arena.core.tasks import TasksTree
from video_arena.digests import sha256_file
from video_arena.games import base as GB
from video_arena.games import pixel_reader as PX
from video_arena.games import readers as RD

FOLDER = "visible-ceiling"
#: the cell's file of what the reader recovered and the values made of it
VISIBLE_FILE = "visible.json"


class VisibleError(RuntimeError):
    """A reader or a plugin broke its contract (the wrong number of states or values)."""


def system_digests(games: list[str]) -> dict[str, str]:
    """{game: the digest of what makes its visible-ceiling answers}."""
    here = Path(__file__)
    out = {}
    for g in games:
        plugin = GB.load_plugin(g)
        params = {"system": FOLDER, "evaluator": plugin.evaluator() if plugin else None}
        # the game's own code and data too: its plugin's visible_values and the model they use make the values
        own = GB.game_files(g) if plugin else []
        out[g] = CI.system_digest([*RD.source_files(g), *own, here, here.with_name("run.py")], params)
    return out


def labelled(rows: list[dict], values: list[float], gd: T.GameDefinition) -> dict:
    """The answer: the reader's rows, `delta` and `state` from the values (before the first row and after
    each), rounded as the ground truth's are."""
    v = [round(float(x), VALUE_DECIMALS) for x in values]
    events = [dict(r, delta=gd.delta_of(v[i], v[i + 1]), state=gd.state_of(v[i + 1])) for i, r in enumerate(rows)]
    return {"events": events}


def check_values(values: Any, n: int, value_range: tuple[float, float], where: str) -> list[float]:
    lo, hi = value_range
    if not (isinstance(values, list) and len(values) == n + 1
            and all(isinstance(x, (int, float)) and math.isfinite(x) and lo <= x <= hi for x in values)):
        raise VisibleError(f"{where}: visible_values gave {type(values).__name__} of "
                           f"{len(values) if isinstance(values, list) else '?'} values, want {n + 1} finite "
                           f"values in [{lo}, {hi}]")
    return [float(x) for x in values]


def case_cell(out: str, tasks_root: str, media_root: str, game: str, case_id: str) -> tuple[str, str, float]:
    """Read one case's video, value what was read, write the cell; (game, case_id, reader CPU seconds)."""
    tree = TasksTree(Path(tasks_root), Path(media_root))
    gt = load_judge().load_gt(tree.gt(game, case_id))
    gd = T.load_game(game, Path(tasks_root))
    plugin = GB.load_plugin(game)
    if plugin is None:
        raise VisibleError(f"{game}: no plugin, so no visible V_t")
    d = R.cell_dir(Path(out), game, case_id)
    (d / "logs").mkdir(parents=True, exist_ok=True)
    log_lines: list[str] = []
    writer = PX.Writer(d / "logs" / "reader-answer.json")
    t0, c0 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    features = RD.load_reader(game).read(tree.media(game, case_id), writer, log_lines.append)
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - t0 + (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    if not (isinstance(features, list) and len(features) == len(writer.rows)):
        raise VisibleError(f"{game}/{case_id}: the reader wrote {len(writer.rows)} rows but returned "
                           f"{len(features) if isinstance(features, list) else type(features).__name__} visible states")
    meta = {k: gt[k] for k in GB.VISIBLE_META if k in gt}
    values = check_values(plugin.visible_values(features, meta), len(features), plugin.value_range,
                          f"{game}/{case_id}")
    answer = labelled(writer.rows, values, gd)
    safe_io.write_json_atomic(d / VISIBLE_FILE, {"features": features, "values": values})
    safe_io.write_bytes_atomic(d / "logs" / "reader.log", "".join(f"{line}\n" for line in log_lines).encode())
    (d / "logs" / "reader-answer.json").unlink(missing_ok=True)
    path = R.write_answer(d, answer)
    # the answer's digest, as every runner records it (the scorer judges only the bytes a record names)
    R.write_run(d, R.RunRecord(protocol="B", model=FOLDER, game=game, case_id=case_id, stop_reason="completed",
                               answer_state="wrote", n_rows=len(answer["events"]), answer_sha256=sha256_file(path),
                               extras={"reader_cpu_s": round(cpu, 2)}))
    return game, case_id, cpu


def make_cells(out: Path, tasks_root: Path, media_root: Path, cases: list[tuple[str, str]], workers: int,
               bar=None) -> None:
    """Make the cells that are not there yet (a stale one was removed before), `workers` at a time."""
    todo = [(g, cid) for g, cid in cases if not (R.cell_dir(out, g, cid) / R.RUN_FILE).is_file()]
    if bar is not None:
        bar.update(len(cases) - len(todo))
    if not todo:
        return
    with ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo)))) as pool:
        jobs = [pool.submit(case_cell, str(out), str(tasks_root), str(media_root), g, cid) for g, cid in todo]
        for job in jobs:
            job.result()
            if bar is not None:
                bar.update(1)


# -- T1 visibility ----------------------------------------------------------------------------------------

def type_counts(gt_events: list[dict], rows: list[dict], matches: list[list[int]]) -> dict[str, list[int]]:
    """{event type: [ground-truth events, of them matched, rows, of them matched]} of one judged answer."""
    out: dict[str, list[int]] = {}
    for e in gt_events:
        out.setdefault(str(e["type"]), [0, 0, 0, 0])[0] += 1
    for r in rows:
        out.setdefault(str(r.get("type")), [0, 0, 0, 0])[2] += 1
    for pi, gi in matches:
        out[str(gt_events[gi]["type"])][1] += 1
        out[str(rows[pi].get("type"))][3] += 1
    return out


def visibility(results: Path, tasks_root: Path, game: str, case_ids: list[str]) -> dict[str, list[int]]:
    """The counts of type_counts summed over the game's cells (every cell the results folder holds)."""
    J = load_judge()
    total: dict[str, list[int]] = {}
    for cid in case_ids:
        path = R.cell_dir(results, game, cid) / R.ANSWER_FILE
        if not path.is_file():
            continue
        gt = J.load_gt(TasksTree(tasks_root).gt(game, cid))
        data = safe_io.read_bounded(path, J.MAX_ANSWER_BYTES)[0]
        rec = J.judge(gt, data)
        rows = json.loads(data).get("events", []) if not rec["format_error"] else []
        for t, c in type_counts(gt["events"], rows, rec["matches"]).items():
            acc = total.setdefault(t, [0, 0, 0, 0])
            for i in range(4):
                acc[i] += c[i]
    return total


def ratio(k: int, n: int) -> str:
    return f"{k / n:.3f}" if n else "n/a"


def visibility_table(counts: dict[str, dict[str, list[int]] | None], types: dict[str, list[str]]) -> list[str]:
    """Markdown rows: per game (None: no reader) and event type (the game's order, then any other type the
    reader wrote), ground-truth events, recall and precision, and the game's all-types row."""
    lines = ["| game | event type | ground-truth events | recall | precision |", "|---|---|---|---|---|"]
    for g, c in counts.items():
        if c is None:
            lines.append(f"| {g} | all | n/a | n/a (no reader) | n/a (no reader) |")
            continue
        order = [t for t in types[g] if t in c] + sorted(t for t in c if t not in types[g])
        for t in order + ["all"]:
            n_gt, hit_gt, n_rows, hit_rows = ([sum(v[i] for v in c.values()) for i in range(4)] if t == "all"
                                              else c[t])
            lines.append(f"| {g} | {t} | {n_gt} | {ratio(hit_gt, n_gt)} | {ratio(hit_rows, n_rows)} |")
    return lines


def section(results: Path | None, tasks_root: Path, games: list[str], case_ids: dict[str, list[str]],
            readable: list[str]) -> list[str]:
    """The doc's section: what the visible ceiling is, T1 visibility per game and type, and per game what
    V_t depends on that the picture does not show."""
    counts = {g: (visibility(results, tasks_root, g, case_ids[g]) if results is not None and g in readable
                  else None) for g in games}
    types = {g: list(T.load_game(g, tasks_root).event_types) for g in games}
    lines = ["## What the video shows: T1 visibility and the visible ceiling", "",
             "Each game's pixel reader (`video_arena/games/<game>/reader.py`, the perception agent's) runs on every "
             "case's video and returns, per event it finds, the visible state it read; the game's plugin computes "
             "V_t from those states alone (`visible_values`: the game's own V_t definition on what the picture "
             "shows, value t from what was seen up to t). The *visible ceiling* rows above are the reader's events "
             "with `delta` and `state` from that V_t, judged like any answer: what a perfect watcher of the video "
             "can score. Games without a reader show n/a.", "",
             "T1 visibility, the reader's rows against the ground truth at the judge's tolerance, summed over the "
             "cases (recall: ground-truth events of the type found; precision: rows of the type that match):", ""]
    lines += visibility_table(counts, types)
    lines += ["", "What each game's V_t depends on that the picture does not show:", ""]
    for g in games:
        note = T.load_game(g, tasks_root).value_not_in_picture
        lines.append(f"- {g}: {note or 'not stated (game.toml has no `[value] not_in_picture`)'}")
    lines.append("")
    return lines
