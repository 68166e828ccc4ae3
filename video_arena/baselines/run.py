"""`video-arena baselines`: the reference points every score is read against, written to docs/RESULTS.md.

    video-arena baselines [--games chess,go] [--limit N] [--out DIR] [--doc docs/RESULTS.md]
                          [--pictures docs/results] [--seed 0] [--harbor] [--workers 2]

Systems (one results folder each under --out, scored by video_arena.scoring.scorer.score_results):

  oracle        the ground truth's own events (judge.oracle_answer): 1.0 by construction
  nop           the empty answer {"events": []}: 0.0
  chance A/B    chance_agent.py: random rows at the game's declared rate (game.toml [baselines]),
                uniform labels; B through `run-b`, A as a "model" of the local OpenAI test server
                through `run-a` (its answer depends only on the request: instruction text, video_ts)
  majority A/B  the same rows, delta `flat`, state the even label
  grid ceiling  Protocol A's best possible answer from the 1 FPS / 256-frame grid alone (see
                grid_ceiling.py), judged; beside it the seed's min(1, 2*TOL*fps_eff) recall bound
  visible ceiling  each game's pixel reader on the whole video, delta/state from the game's V_t on the
                visible states it read (visible.py); with it T1 visibility per game and event type
  perception B  perception_agent.py (the dispatcher of the games' readers) through `run-b` (natively;
                --harbor: on Docker, see harbor.py)

The doc's numbers come only from this command. Its header carries a digest of every input (tasks'
game.toml/cases/gt/manifest, the agents' source, the judge), which a test recomputes (inputs_digest).
Each cell records the digest of its own inputs; a stale one is made again, never kept (cell_inputs.py).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any
import shutil
import re

from video_arena import paths
from video_arena import safe_io
from video_arena.core import results as R
from video_arena.core.tasks import TasksTree
from video_arena.cli_args import comma_list
from video_arena.progress import bar as progress_bar
from video_arena.baselines import cell_inputs as CI
from video_arena.baselines import chance_agent
from video_arena.baselines import visible as V
from video_arena.baselines.grid_ceiling import grid_ceiling_answer, grid_for
from video_arena.games import readers as RD
from video_arena.core import tasks as T
from video_arena.media import grid as G
from video_arena.core.condition import DEFAULT_CONDITION
from video_arena.core.judge_loader import load_judge
from video_arena.digests import sha256_file
from video_arena.toolkit_info import toolkit_provenance
from video_arena.scoring import cells as SC
from video_arena.scoring.scorer import score_results
from video_arena.protocol_b import runner as run_b_cli

HERE = Path(__file__).resolve().parent
PERCEPTION = HERE / "perception_agent.py"
CHANCE = HERE / "chance_agent.py"
SYSTEMS = [  # (folder, label, protocol)
    ("oracle", "oracle", "A/B"),
    ("nop", "nop (empty answer)", "A/B"),
    ("chance-b", "chance", "B"),
    ("majority-b", "majority", "B"),
    ("chance-a", "chance", "A"),
    ("majority-a", "majority", "A"),
    ("grid-ceiling", "grid ceiling", "A"),
    (V.FOLDER, "visible ceiling", "B"),
    ("perception-b", "perception agent", "B"),
]


#: the systems whose answers are written directly (write_cell), not by a runner making requests
WRITTEN_DIRECTLY = ("oracle", "nop", "grid-ceiling")
#: the folders whose records no runner wrote (no request made, no prompt delivered): only the answer's digest
#: is asked of them
NO_RUNNER = (*WRITTEN_DIRECTLY, V.FOLDER)


class BaselinesError(RuntimeError):
    pass


# -- inputs ------------------------------------------------------------------------------------------

def definition(tasks_root: Path, game: str) -> T.GameDefinition:
    try:
        return T.load_game(game, tasks_root)
    except (T.UnknownGame, T.TasksTreeError) as exc:
        raise BaselinesError(str(exc)) from None


def rates(tasks_root: Path, games: list[str]) -> dict[str, float]:
    out = {}
    for g in games:
        rate = definition(tasks_root, g).baseline_events_per_minute
        if rate is None:
            raise BaselinesError(f"{g}: game.toml has no [baselines] events_per_minute (a number >= 0)")
        out[g] = rate
    return out


def perception_games(tasks_root: Path, games: list[str] | None = None) -> list[str]:
    """The games (of `games`, default every game of the tree) the perception agent has a reader for:
    those with a pixel reader, video_arena/games/<game>/reader.py."""
    have = set(RD.reader_games())
    return [g for g in (T.list_games(tasks_root) if games is None else games) if g in have]


def perception_reads(tasks_root: Path) -> str:
    """'chess: ...; go and gomoku: ...': what the perception agent reads, per game of the tree (each
    reader's READS; games that read the same named together)."""
    reads: dict[str, list[str]] = {}
    for g in perception_games(tasks_root):
        reads.setdefault(" ".join(RD.load_reader(g).READS.split()), []).append(g)
    return "; ".join(f"{' and '.join(gs)}: {text}" for text, gs in reads.items())


def agent_title(tasks_root: Path, game: str) -> str:
    """The game's title as the chance agent looks its tables up: as its instruction.md states it (lower
    case; the title, not the folder name), so no game gets a silent zero-row answer."""
    try:
        title = chance_agent.parse_instruction((tasks_root / game / "instruction.md").read_text(encoding="utf-8"))["game"]
    except (OSError, chance_agent.InstructionError) as exc:
        raise BaselinesError(f"{game}: the chance agent cannot read its instruction.md: {exc}")
    if "," in title or "=" in title:
        raise BaselinesError(f"{game}: the game title {title!r} cannot be passed in --rates (',' or '=')")
    return title


def agent_rates(tasks_root: Path, rate_table: dict[str, float]) -> dict[str, float]:
    """The rates by the title the chance agent looks them up by (agent_title)."""
    return {agent_title(tasks_root, g): v for g, v in rate_table.items()}


def agent_where(tasks_root: Path, games: list[str]) -> dict[str, list]:
    """{title: parts} of the games whose game.toml gives the chance agent a `where` table (`[baselines]
    chance_where`), by the title the agent looks it up by; a part of single characters as one string."""
    out: dict[str, list] = {}
    for g in games:
        parts = definition(tasks_root, g).chance_where
        if parts:
            out[agent_title(tasks_root, g)] = ["".join(p) if all(len(v) == 1 for v in p) else list(p) for p in parts]
    return out


def where_arg(where: dict[str, list]) -> str:
    return json.dumps(where, sort_keys=True, separators=(",", ":"))


def rates_arg(r: dict[str, float]) -> str:
    return ",".join(f"{g}={v:g}" for g, v in sorted(r.items()))


def case_ids(tasks_root: Path, game: str, limit: int | None) -> list[str]:
    ids = [c["case_id"] for c in T.load_cases(game, tasks_root)]
    return ids[:limit] if limit else ids


def inputs_digest(tasks_root: Path, games: list[str], limit: int | None) -> str:
    """SHA-256 over everything the doc's numbers depend on (not the media bytes: their digests are in
    each manifest, which is hashed)."""
    h = hashlib.sha256()

    def add(name: str, data: bytes) -> None:
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())

    for g in games:
        for f in ("game.toml", "instruction.md", T.CASES_FILE, T.MANIFEST_FILE):
            add(f"{g}/{f}", (tasks_root / g / f).read_bytes())
        for cid in case_ids(tasks_root, g, limit):
            add(f"{g}/gt/{cid}", TasksTree(tasks_root).gt(g, cid).read_bytes())
    for name, data in agent_files():
        add(f"agent/{name}", data)
    for p in (HERE / "run.py", HERE / "cell_inputs.py", HERE / "grid_ceiling.py", HERE / "visible.py",
              paths.judge_path()):
        add(p.name, p.read_bytes())
    for g in perception_games(tasks_root, games):   # what their visible V_t is made of
        for p in RD.source_files(g):
            add(f"{g}/source/{p.name}", p.read_bytes())
    return h.hexdigest()


def system_inputs(cmds: dict[str, str], seed: int, title_rates: dict[str, float],
                  title_where: dict[str, list] | None = None) -> dict[str, str]:
    """{system folder: the digest of what makes its answers} (cell_inputs.py): the source files and the
    parameters of its agent, and the judge (the visible ceiling's, per game: visible.system_digests)."""
    run_py = HERE / "run.py"
    a_files = (CHANCE, run_py, DEFAULT_CONDITION, paths.repo_resource("tests", "fixtures", "openai_test_server.py"),
               *CI.module_sources("video_arena.protocol_a.runner"))  # run-a's own code: prompt, grid, engine
    installed = {name: hashlib.sha256(data).hexdigest() for name, data in agent_files()}
    out = {"oracle": CI.system_digest([run_py], "oracle"), "nop": CI.system_digest([run_py], "nop"),
           "grid-ceiling": CI.system_digest([run_py, HERE / "grid_ceiling.py", Path(G.__file__)], "grid-ceiling"),
           "perception-b": CI.system_digest([], {"cmd": cmds["perception-b"], "installed": installed})}
    for mode in ("chance", "majority"):
        out[f"{mode}-b"] = CI.system_digest([CHANCE], cmds[f"{mode}-b"])
        out[f"{mode}-a"] = CI.system_digest(a_files, {"mode": mode, "seed": seed, "rates": title_rates,
                                                      "where": title_where or {}})
    return out


# -- answers written directly (oracle, nop, grid ceiling) ------------------------------------------------

def write_cell(out: Path, game: str, case_id: str, answer: dict, protocol: str, model: str,
               extra: dict | None = None) -> None:
    d = R.cell_dir(out, game, case_id)
    d.mkdir(parents=True, exist_ok=True)
    path = R.write_answer(d, answer)
    # the answer's digest, as every runner records it (the scorer judges only the bytes a record names)
    R.write_run(d, R.RunRecord(protocol=protocol, model=model, game=game, case_id=case_id, stop_reason="completed",
                               answer_state="answered" if protocol == "A" else "wrote",
                               n_rows=len(answer["events"]), answer_sha256=sha256_file(path),
                               extras=dict(extra or {})))


def direct_systems(out: Path, tasks_root: Path, media_root: Path, games: list[str], limit: int | None) -> dict:
    """oracle, nop and grid-ceiling folders; returns {game: [recall bound per case]}."""
    J = load_judge()
    bounds: dict[str, list[float]] = {}
    todo = [(g, cid) for g in games for cid in case_ids(tasks_root, g, limit)]
    with progress_bar(3 * len(todo), "oracle, nop, grid ceiling", "cell") as bar:
        for g, cid in todo:
            gt = J.load_gt(TasksTree(tasks_root).gt(g, cid))
            write_cell(out / "oracle", g, cid, J.oracle_answer(gt), "B", "oracle")
            write_cell(out / "nop", g, cid, {"events": []}, "B", "nop")
            ts, fps_eff = grid_for(TasksTree(tasks_root, media_root).media(g, cid))
            write_cell(out / "grid-ceiling", g, cid, grid_ceiling_answer(gt, ts, 3.0), "A", "grid-ceiling",
                       {"grid_fps_eff": fps_eff, "grid_n_frames": len(ts)})
            bounds.setdefault(g, []).append(min(1.0, 2 * 3.0 * fps_eff))
            bar.update(3)
    return bounds


# -- agents through the real runners ---------------------------------------------------------------

#: Where the agents' scripts are copied for `run-b`: an isolated agent sees no file of the checkout
#: (run-b refuses to allow a path inside it), so the standalone agents are allowed from here.
AGENTS_HOME = Path.home() / ".cache" / "video-arena" / "baseline-agents"


def agent_files() -> list[tuple[str, bytes]]:
    """(file name, bytes) of the agents' folder: the perception agent's (the dispatcher, the shared
    helpers, every game's reader and their index: video_arena/games/readers.py) and the chance agent."""
    return RD.agent_files(PERCEPTION) + [(CHANCE.name, CHANCE.read_bytes())]


def install_agents(dest: Path = AGENTS_HOME) -> Path:
    """Write the standalone agents' folder (flat) at `dest` (outside the checkout) and return it."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, data in agent_files():
        safe_io.write_bytes_atomic(dest / name, data)
    return dest


def run_b(out: Path, agent_cmd: str, model: str, games: list[str], limit: int | None, tasks_root: Path,
          media_root: Path, workers: int) -> None:
    argv = ["--agent-cmd", agent_cmd, "--out", str(out), "--model", model, "--games", ",".join(games),
            "--tasks-root", str(tasks_root), "--media-root", str(media_root), "--max-turns", "0",
            "--timeout-min", "20", "--workers", str(workers), "--hardlink-media",
            "--allow-path", f"{install_agents()}:ro"]
    if limit:
        argv += ["--limit", str(limit)]
    rc = run_b_cli.main(argv)
    if rc not in (0, None):
        print(f"baselines: run-b for {model} exited {rc}", file=sys.stderr)


def _load_test_server():
    path = paths.repo_resource("tests", "fixtures", "openai_test_server.py")
    spec = importlib.util.spec_from_file_location("va_openai_test_server", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def request_text(body: dict) -> str:
    parts = []
    for m in body.get("messages") or []:
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text")
    return "\n".join(parts)


def protocol_a_action(mode: str, seed: int, title_rates: dict[str, float], title_where: dict[str, list] | None = None):
    """The test server's action for a chance/majority "model": the answer from the request alone
    (`title_rates` from `agent_rates`, `title_where` from `agent_where`)."""

    def action(body: dict) -> dict:
        text = request_text(body or {})
        m = re.search(r"^video_ts = (\[.*?\])$", text, re.M)
        try:
            ts = json.loads(m.group(1)) if m else []
            answer = chance_agent.answer_for_prompt(text, ts, title_rates, seed, mode, title_where)
        except (ValueError, chance_agent.InstructionError) as exc:
            return {"content": f"cannot answer: {exc}"}
        return {"content": json.dumps(answer)}

    return action


def run_a(out: Path, mode: str, seed: int, title_rates: dict[str, float], games: list[str], limit: int | None,
          tasks_root: Path, media_root: Path, cache: Path, workers: int, title_where: dict[str, list] | None = None) -> None:
    # deferred: imports openai (about 3 s of CPU)
    from video_arena.protocol_a import runner

    srv_mod = _load_test_server()
    with srv_mod.OpenAITestServer() as srv:
        srv.default = protocol_a_action(mode, seed, title_rates, title_where)
        argv = ["--model", mode, "--base-url", srv.base_url, "--out", str(out), "--games", ",".join(games),
                "--tasks-root", str(tasks_root), "--media-root", str(media_root), "--cache-dir", str(cache),
                "--workers", str(workers)]
        if limit:
            argv += ["--limit", str(limit)]
        env_key = os.environ.get("OPENAI_API_KEY")
        os.environ["OPENAI_API_KEY"] = "test"
        try:
            rc = runner.main(argv)
        finally:
            if env_key is None:
                os.environ.pop("OPENAI_API_KEY", None)
            else:
                os.environ["OPENAI_API_KEY"] = env_key
    if rc not in (0, None):
        print(f"baselines: run-a for {mode} exited {rc}", file=sys.stderr)


def perception_cmd() -> str:
    return f"python3 {shlex.quote(str(AGENTS_HOME / PERCEPTION.name))} --sandbox {{sandbox}}"


def chance_cmd(mode: str, seed: int, title_rates: dict[str, float], title_where: dict[str, list] | None = None) -> str:
    """The chance/majority agent's command; `title_rates` from `agent_rates`, `title_where` from `agent_where`."""
    return (f"python3 {shlex.quote(str(AGENTS_HOME / CHANCE.name))} --sandbox {{sandbox}} --mode {mode} --seed {seed} "
            f"--rates {shlex.quote(rates_arg(title_rates))}"
            + (f" --where {shlex.quote(where_arg(title_where))}" if title_where else ""))


# -- the doc ----------------------------------------------------------------------------------------

def fmt(mean, ci) -> str:
    if mean is None:
        return "n/a"
    return f"{mean:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{mean:.3f}"


def overall_cell(ov: dict[str, Any], metric: str, n_columns: int) -> str:
    """The overall cell: the mean of the game means, and `(k of N games)` when the row has a mean for
    only k of the table's N games (a row over fewer games is a different average, not comparable)."""
    k = ov["n_games"][metric]
    text = fmt(ov["means"][metric], ov["ci95"][metric])
    return text if k in (0, n_columns) else f"{text} ({k} of {n_columns} games)"


#: The RESULTS tables' titles, keyed by metric name (a metric without one is titled by its label)
TABLE_TITLES = {SC.T1_F1: "T1 (event F1)", SC.REWARD: "Headline reward (strict F1)",
                SC.T2_MACRO_ACC: "T2 (delta, macro accuracy of matched rows)",
                SC.T3_MACRO_ACC: "T3 (state, macro accuracy of matched rows)"}


def render_doc(scores: dict[str, Any], games: list[str], bounds: dict[str, list[float]], digest: str,
               limit: int | None, seed: int, pictures: dict[str, str], perception_rows: list[str],
               harbor_note: str, rate_table: dict[str, float] | None = None,
               tasks_root: Path | None = None, visible_lines: list[str] | None = None) -> str:
    prov = toolkit_provenance()
    root = paths.tasks_root(tasks_root)
    lines = [
        "# Results: reference points",
        "",
        "<!-- generated by `video-arena baselines`; do not edit by hand -->",
        "",
        f"Generated by `video-arena baselines --games {','.join(games)}{' --limit ' + str(limit) if limit else ''}"
        f"{' --seed ' + str(seed) if seed else ''}` over the built-in cases, judge {prov.get('judge_version')}, "
        f"toolkit {prov.get('toolkit_version')}.",
        f"Inputs digest (tasks' game.toml, instruction, cases, gt, manifests; the agents; the judge): `{digest}`.",
        "",
        "Each cell: the mean over the game's cases, with the scorer's 95 % bootstrap interval in brackets; "
        "*overall* is the mean of the game means (stratified bootstrap); a row with a mean for only k of the "
        "table's N games says `(k of N games)` there: an average over other games, not comparable with a full row. "
        "n = cases scored.",
        "oracle and nop are protocol-independent (the answer key and the empty answer). chance and majority "
        "read only the sandbox's files (B) or the request (A); the grid ceiling is the best answer a perfect "
        "model can give from Protocol A's 1 FPS / 256-frame grid; the visible ceiling is the best a perfect "
        "watcher of the whole video can score from what the picture shows (below); the perception agent reads the pixels.",
        "",
    ]
    if rate_table:
        lines += ["Chance and majority rows per minute (each game's `[baselines] events_per_minute` in game.toml, "
                  "a prior from the game's tempo, not a statistic of the cases): "
                  + ", ".join(f"{g} {rate_table[g]:g}" for g in games if g in rate_table) + ".", ""]
    for metric in (SC.T1_F1, *(m for m in SC.METRICS if m != SC.T1_F1)):  # a table per metric the judge names
        title = TABLE_TITLES.get(metric, SC.label_of(metric))
        lines += [f"## {title}", "", "| system | protocol | " + " | ".join(games) + " | overall |",
                  "|---|---|" + "---|" * (len(games) + 1)]
        for folder, label, proto in SYSTEMS:
            s = scores.get(folder)
            if s is None:
                continue
            cells = []
            for g in games:
                gs = s.games.get(g)
                if gs is None:
                    cells.append("n/a")
                    continue
                cells.append(f"{fmt(gs.means[metric], gs.ci[metric])} (n={gs.n[metric]})")
            cells.append(overall_cell(s.overall(games), metric, len(games)))
            lines.append(f"| {label} | {proto} | " + " | ".join(cells) + " |")
        if metric == SC.T1_F1:
            cells = [f"{sum(b) / len(b):.3f}" if b else "n/a" for b in (bounds.get(g, []) for g in games)]
            allb = [sum(bounds[g]) / len(bounds[g]) for g in games if bounds.get(g)]
            cells.append(f"{sum(allb) / len(allb):.3f}" if allb else "n/a")
            lines.append("| recall bound min(1, 2*TOL*fps_eff) | A | " + " | ".join(cells) + " |")
            lines += ["", "The grid ceiling row is an F1 (events after the last grid frame get no row, so its "
                      "precision stays 1); the bound below it is the seed's recall bound for evenly spread events."]
        lines.append("")
    lines += visible_lines or []
    lines += ["## Perception agent", "",
              "A standalone Protocol B agent (Python 3.11, numpy, Pillow, ffmpeg; no toolkit import): a dispatcher "
              "that runs the game's pixel reader (`video_arena/games/<game>/reader.py`), which decodes every frame, "
              "takes the first frame whose board or table differs from the previous one as an "
              f"event, reads the move from the pixels ({perception_reads(root)}) "
              "and applies the game's rules for the event type; `delta` is always `flat` and `state` a naive "
              "balance (material, prisoners, last threat, cards left). Run it on any tasks tree with:",
              "",
              "```",
              "video-arena baselines --install-agents ~/va-agents",
              "video-arena run-b --allow-path ~/va-agents:ro \\",
              "    --agent-cmd \"python3 $HOME/va-agents/perception_agent.py --sandbox {sandbox}\" \\",
              f"    --out results/b-perception --model perception --games {','.join(perception_games(root))}",
              "```",
              "",
              "(an isolated agent sees no file of the checkout, so the agent runs from a copy it is allowed to read: "
              "the dispatcher, the readers' shared helpers and every game's reader, flat in one folder; the host's "
              "`python3` needs numpy and Pillow: Debian's python3-numpy and python3-pil, which scripts/setup.sh "
              "installs)",
              "",
              "and on Harbor, inside the sandbox image, on a Protocol B dataset (`video-arena make-harbor --protocol B "
              "--net compose-none`): `PYTHONPATH=. harbor run -p DATASET -a agents.perception_agent:PerceptionAgent`.",
              "",
              "Its T1 is the pixel-level check of the cases: a ground-truth event it cannot find within 3 s in "
              "the video, or an event it sees that the ground truth lacks, is listed here per case.",
              ""]
    lines += perception_rows or ["Every case: T1 = 1.000 (every ground-truth event read from the pixels within 3 s, nothing extra)."]
    lines += [""]
    if harbor_note:
        lines += [harbor_note, ""]
    if pictures:
        lines += ["## Timelines (perception agent, first case of each game)", ""]
        for g in games:
            if g in pictures:
                lines += [f"![{g}]({pictures[g]})", ""]
    return "\n".join(lines).rstrip() + "\n"


def perception_findings(score, games: list[str], results: Path, tasks_root: Path) -> list[str]:
    """One line per case the perception agent did not read perfectly: the events it missed and the
    events it read that the ground truth lacks (time, type, actor, where)."""
    J = load_judge()
    rows = []
    for g in games:
        gs = score.games.get(g)
        if gs is None:
            continue
        for c in gs.cells:
            if c.record is None and c.reason == "not run (no case folder)":
                continue  # outside --limit
            if c.record is None:
                rows.append(f"- {g}/{c.case_id}: not scored ({c.reason})")
                continue
            r = c.record
            if r["n_matched"] == r["n_gt"] == r["n_pred"]:
                continue
            gt = J.load_gt(TasksTree(tasks_root).gt(g, c.case_id))["events"]
            doc = safe_io.read_json_object(R.cell_dir(results, g, c.case_id) / R.ANSWER_FILE)[0]
            pred = doc.get("events") if doc is not None and isinstance(doc.get("events"), list) else []
            mp, mg = {int(p) for p, _ in r["matches"]}, {int(q) for _, q in r["matches"]}
            show = lambda e: f"{float(e.get('t', 0)):g} s {e.get('type')} {e.get('actor')} {e.get('where')}"  # noqa: E731
            missed = [show(e) for i, e in enumerate(gt) if i not in mg]
            extra = [show(e) for i, e in enumerate(pred) if i not in mp]
            rows.append(f"- {g}/{c.case_id}: T1 {r[SC.T1_F1]:.3f}; missed {len(missed)}"
                        f"{' (' + '; '.join(missed[:4]) + ')' if missed else ''}, extra {len(extra)}"
                        f"{' (' + '; '.join(extra[:4]) + ')' if extra else ''}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena baselines", description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", help="comma-separated games (default: every game with cases; the perception agent runs on "
                    "those whose game.toml says what it reads, `[baselines] perception`)")
    ap.add_argument("--limit", type=int, help="the first N cases of each game")
    ap.add_argument("--out", default="results/baselines", help="results folders (one per system)")
    ap.add_argument("--doc", default=None, help="the Markdown written (default docs/RESULTS.md)")
    ap.add_argument("--pictures", default=None, help="timeline PNGs (default docs/results/)")
    ap.add_argument("--tasks-root")
    ap.add_argument("--media-root")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--harbor", action="store_true", help="also run the perception agent on Harbor (Docker)")
    ap.add_argument("--skip", default="", help="comma-separated systems not to (re)run: " + ",".join(s[0] for s in SYSTEMS))
    ap.add_argument("--force", action="store_true", help="re-run cells that already have a run.json")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar (also: VA_NO_PROGRESS=1)")
    ap.add_argument("--install-agents", metavar="DIR",
                    help="only write the standalone agents (perception dispatcher, readers, chance) flat into DIR")
    args = ap.parse_args(argv)
    if args.install_agents:
        print(f"baselines: agents written to {install_agents(Path(args.install_agents).expanduser())}")
        return 0
    try:
        return _main(args)
    except BaselinesError as exc:
        print(f"video-arena baselines: {exc}", file=sys.stderr)
        return 2


def _main(args) -> int:
    tasks_root = paths.tasks_root(args.tasks_root)
    media_root = paths.media_root(tasks_root, args.media_root)
    if args.games:
        games = comma_list(args.games)
    else:  # every game of the tasks tree that has cases
        games = sorted(p.parent.name for p in tasks_root.glob("*/cases.json") if case_ids(tasks_root, p.parent.name, None))
    unknown = [g for g in games if not TasksTree(tasks_root).cases_path(g).is_file()]
    if unknown:
        raise BaselinesError(f"no cases for {', '.join(unknown)} under {tasks_root}")
    readable = perception_games(tasks_root, games)   # the perception agent reads these only
    if args.harbor and not readable:
        raise BaselinesError(f"--harbor runs the perception agent, which reads only "
                             f"{', '.join(perception_games(tasks_root))}")
    if args.limit is not None and args.limit < 1:
        raise BaselinesError("--limit must be >= 1")
    for g in games:
        for cid in case_ids(tasks_root, g, args.limit):
            if not TasksTree(tasks_root, media_root).media(g, cid).is_file():
                raise BaselinesError(f"{g}/{cid}: media missing under {media_root} (build or fetch the media first)")
    out = Path(args.out)
    doc = Path(args.doc) if args.doc else paths.REPO_ROOT / "docs" / "RESULTS.md"
    pics = Path(args.pictures) if args.pictures else paths.REPO_ROOT / "docs" / "results"
    skip = set(comma_list(args.skip))
    no_reader = [g for g in games if g not in readable]
    if no_reader:  # every other system runs on them; the perception agent reads only the games it has a reader for
        print(f"baselines: no perception reader for {', '.join(no_reader)} (games: "
              f"{', '.join(perception_games(tasks_root))}): "
              "the perception agent is not run on them", file=sys.stderr)
    rate_table = rates(tasks_root, games)
    title_rates = agent_rates(tasks_root, rate_table)
    title_where = agent_where(tasks_root, games)
    if args.force:
        for folder, _, _ in SYSTEMS:
            if folder not in skip and (out / folder).exists():
                shutil.rmtree(out / folder)

    # a cell made from other inputs (tasks, agent, judge) is never kept: removed here, made again below
    runs = [s for s in ("chance-b", "majority-b", "perception-b", "chance-a", "majority-a") if s not in skip]
    cmds = {"chance-b": chance_cmd("chance", args.seed, title_rates, title_where),
            "majority-b": chance_cmd("majority", args.seed, title_rates, title_where), "perception-b": perception_cmd()}
    inputs = system_inputs(cmds, args.seed, title_rates, title_where)
    want = {folder: CI.expected(tasks_root, readable if folder == "perception-b" else games, inputs[folder])
            for folder, _, _ in SYSTEMS if folder != V.FOLDER}
    want[V.FOLDER] = CI.expected_per_game(tasks_root, V.system_digests(readable))
    for folder, _, _ in SYSTEMS:
        if folder in skip and folder not in WRITTEN_DIRECTLY:   # the written ones are written every time
            stale = CI.stale_cells(out / folder, want[folder])
            if stale:
                raise BaselinesError(f"{folder}: {len(stale)} cell(s) were made from other inputs (tasks, agent or "
                                     f"judge; first {stale[0].parent.name}/{stale[0].name}): it cannot be skipped")
            continue
        n_stale = CI.drop_stale(out / folder, want[folder])
        if n_stale:
            print(f"baselines: {folder}: {n_stale} cell(s) made from other inputs removed; they are made again",
                  file=sys.stderr)

    # one bar over every cell of every system: n cases x (oracle, nop, grid ceiling + each system run)
    n = sum(len(case_ids(tasks_root, g, args.limit)) for g in games)
    visible_cases = [(g, cid) for g in readable for cid in case_ids(tasks_root, g, args.limit)]
    make_visible = V.FOLDER not in skip
    bar = progress_bar(n * (3 + len(runs) + bool(args.harbor)) + len(visible_cases) * make_visible, "baselines", "cell",
                       enabled=not args.no_progress)
    with bar:
        print("baselines: oracle, nop, grid ceiling", file=sys.stderr)
        with bar.stage(3 * n, "oracle, nop, grid ceiling"):
            bounds = direct_systems(out, tasks_root, media_root, games, args.limit)
        if make_visible:
            print("baselines: visible ceiling (the games' readers and their visible V_t)", file=sys.stderr)
            with bar.stage(len(visible_cases), "visible ceiling"):
                V.make_cells(out / V.FOLDER, tasks_root, media_root, visible_cases, args.workers, bar)
        for folder in [r for r in runs if r.endswith("-b")]:
            run_games = readable if folder == "perception-b" else games
            with bar.stage(n, folder):  # run-b's own bar counts here
                if run_games:
                    run_b(out / folder, cmds[folder], folder[:-2], run_games, args.limit, tasks_root, media_root,
                          args.workers)
        cache = out / ".frames-cache"
        for mode in [r[:-2] for r in runs if r.endswith("-a")]:
            with bar.stage(n, f"{mode}-a"):
                run_a(out / f"{mode}-a", mode, args.seed, title_rates, games, args.limit, tasks_root, media_root,
                      cache, args.workers, title_where)
        harbor_note = ""
        if args.harbor:
            # deferred: imports Harbor (about 1.1 s of CPU); only --harbor
            from video_arena.baselines import harbor as H

            with bar.stage(n, "perception on Harbor"):
                harbor_note = H.run_perception_on_harbor(out / "perception-harbor", readable, args.limit,
                                                         tasks_root)

    for folder, _, _ in SYSTEMS:   # every cell this run made records what it was made from
        if folder not in skip or folder in WRITTEN_DIRECTLY:
            CI.stamp(out / folder, want[folder])
    scores = {}
    for folder, _, _ in SYSTEMS:
        if (out / folder).is_dir():
            # answers written directly (no request was made) have no request to rebuild; the run-a
            # baselines (chance-a, majority-a) are verified like any Protocol A results folder
            scores[folder] = score_results(out / folder, tasks_root, progress=False, label=folder,
                                           verify_requests=folder not in NO_RUNNER,
                                           runner_records=folder not in NO_RUNNER)
            check_reportable(folder, scores[folder])
    pictures = {}
    if "perception-b" in scores:
        pictures = draw_pictures(out / "perception-b", tasks_root, games, pics, doc.parent)
    findings = (perception_findings(scores["perception-b"], games, out / "perception-b", tasks_root)
                if "perception-b" in scores else [])
    if no_reader:   # say so instead of letting the perfect-read line stand for games the agent never saw
        read = readable
        head = findings or ([f"Every case of {', '.join(read)}: T1 = 1.000 (every ground-truth event read from the "
                             "pixels within 3 s, nothing extra)."] if read and "perception-b" in scores else [])
        findings = head + [f"Not run on {', '.join(no_reader)}: the agent has no reader for "
                           f"{'that game' if len(no_reader) == 1 else 'those games'}."]
    visible_lines = V.section(out / V.FOLDER if V.FOLDER in scores else None, tasks_root, games,
                              {g: case_ids(tasks_root, g, args.limit) for g in games}, readable)
    text = render_doc(scores, games, bounds, inputs_digest(tasks_root, games, args.limit), args.limit, args.seed,
                      pictures, findings, harbor_note, rate_table, tasks_root, visible_lines)
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text, encoding="utf-8")
    print(text)
    print(f"baselines: wrote {doc}", file=sys.stderr)
    return 0


def check_reportable(folder: str, s) -> None:
    """A system's table goes into the doc only when `video-arena score` would print it: one measurement
    (no mixed condition fields) and no cell failing the answer or ground-truth integrity checks."""
    if s.mixed:
        raise BaselinesError(f"{folder} holds cells of more than one measurement ({'; '.join(s.mixed[:3])}): "
                             f"not written into the doc (re-run it with --force)")
    bad = s.integrity_errors()
    if bad:
        raise BaselinesError(f"{folder}: {len(bad)} cell(s) fail the integrity checks (first {bad[0].game}/"
                             f"{bad[0].case_id}: {bad[0].reason}): not written into the doc (re-run it with --force)")


def draw_pictures(results: Path, tasks_root: Path, games: list[str], pics: Path, doc_dir: Path) -> dict[str, str]:
    # deferred: imports matplotlib (about 3.2 s of CPU)
    from video_arena.scoring.timeline import draw_timeline

    J = load_judge()
    pics.mkdir(parents=True, exist_ok=True)
    out = {}
    for g in games:
        ids = case_ids(tasks_root, g, 1)
        if not ids:
            continue
        cid = ids[0]
        try:
            data = safe_io.read_bounded(R.cell_dir(results, g, cid) / R.ANSWER_FILE, J.MAX_ANSWER_BYTES)[0]
        except OSError:
            continue
        gt = J.load_gt(TasksTree(tasks_root).gt(g, cid))
        rec = J.judge(gt, data)
        png = pics / f"perception-{g}.png"
        draw_timeline(gt, data, rec, png, title=f"perception agent: {g}/{cid}")
        out[g] = os.path.relpath(png, doc_dir)
    return out


if __name__ == "__main__":
    sys.exit(main())
