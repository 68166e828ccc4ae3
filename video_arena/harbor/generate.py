"""`video-arena make-harbor` (and the top-level make_harbor.py): a Harbor dataset, one task per case.

    video-arena make-harbor --out harbor/video-arena                      # Protocol B, --net strict
    video-arena make-harbor --out harbor/video-arena-a --protocol A
    video-arena make-harbor --out harbor/va-local --net compose-none            # Docker hosts without egress control
    video-arena make-harbor --out harbor/va-cloud --media copy --base-image REGISTRY/video-arena/base@sha256:<64 hex>

Each case becomes `<out>/<game>-<case_id>/` (docs/HARBOR.md, "A task folder"):

    task.toml                  Harbor config: metadata, budget, image, network, artifacts
    instruction.md             B: the turn-1 prompt pointing at /app; A: instruction_for("video")
    environment/
        docker-compose.yaml    mount mode: the image + read-only mounts of match.mp4 (and, B, instruction.md)
        Dockerfile             copy mode: FROM the base image, COPY match.mp4 (B: + instruction.md) + the seed
        instruction.md         B only: instruction_for("agentic")
        match.mp4, answer.json copy mode only: the video and the game's answer seed, byte copies
    tests/                     verifier only: test.sh, score_harbor.py, judge.py, gt.json, case.json
    solution/                  oracle only: solve.sh, answer.json (the ground truth on the answer schema)

The output is written to a temporary folder beside --out and renamed into place when complete, so a
failed or interrupted run never leaves a half-written dataset (and the next run removes the temporary
folders a killed one left). --out is resolved, symlinks followed, before it is checked against the
tasks tree. An existing --out is replaced only with
--force, and only if it is a dataset this command wrote (it holds video-arena-dataset.json).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from video_arena.digests import copy_sha256, sha256_bytes, sha256_file
from video_arena import paths
from video_arena.progress import bar as progress_bar
from video_arena.core import iter_cases, list_games, load_cases, load_game, resolve, text_digest
from video_arena.core.tasks import (GAME_VERSION_KEY, GameDefinition, TasksTree, TasksTreeError, manifest_cases,
                                    media_digest_problem, media_rel)
from video_arena.harbor import spec as S
from video_arena.harbor_api import task_models as HT
from video_arena.container_host.registry import check_base_image, is_pinned
from video_arena.core.judge_loader import load_judge
from video_arena.cli_args import comma_list

GENERATOR = "video-arena make-harbor"


class GenerateError(RuntimeError):
    """The dataset cannot be generated as asked (the message says why); nothing was written."""


def templates_dir() -> Path:
    return paths.repo_resource("harbor_templates")


def _tq(value: Any) -> str:
    """A quoted string valid in both TOML (basic string) and YAML (double-quoted scalar)."""
    return json.dumps(str(value), ensure_ascii=False)


def template_env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(templates_dir())), undefined=StrictUndefined,
                      keep_trailing_newline=True, autoescape=False)
    env.filters["tq"] = _tq
    # the verifier's fallback reward.json (every judge reward key 0.0), written when scoring fails
    env.globals["zero_reward_json"] = json.dumps(dict.fromkeys(load_judge().REWARD_KEYS, 0.0))
    return env


@dataclass
class Options:
    out: Path
    protocol: str = "B"
    net: str = "strict"
    media: str = "mount"
    base_image: str = S.DEFAULT_BASE_IMAGE
    host_media: Path | None = None
    tasks_root: Path | None = None
    games: list[str] | None = None
    limit: int | None = None
    force: bool = False
    progress: bool = True


@dataclass
class Result:
    out: Path
    tasks: list[str] = field(default_factory=list)
    skipped_games: list[str] = field(default_factory=list)
    missing_media: list[str] = field(default_factory=list)
    unreadable_media: list[str] = field(default_factory=list)
    #: games whose tasks tree has no manifest.json: their videos are not checked against one
    unchecked_games: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _write(path: Path, data: bytes | str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.write_bytes(data)
    os.chmod(path, mode)


def _copy(src: Path, dst: Path) -> str:
    """Copy a file (bytes only, mode 0644) and return its SHA-256."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    digest = copy_sha256(src, dst)
    os.chmod(dst, 0o644)
    return digest


def media_world_readable(path: Path) -> bool:
    """Mount mode: the video is bind-mounted as it is, and the agent (uid 1000 in the image) is not its
    owner, so it must be readable by others (a 0600 file reads as `Permission denied` in the trial)."""
    try:
        return bool(path.stat().st_mode & 0o004)
    except OSError:
        return False


def _check_options(o: Options) -> None:
    if o.protocol not in S.PROTOCOLS:
        raise GenerateError(f"--protocol must be A or B, not {o.protocol!r}")
    if o.net not in S.NET_MODES:
        raise GenerateError(f"--net must be one of {', '.join(S.NET_MODES)}, not {o.net!r}")
    if o.media not in S.MEDIA_MODES:
        raise GenerateError(f"--media must be mount or copy, not {o.media!r}")
    bad_image = check_base_image(o.base_image)
    if bad_image:
        raise GenerateError(f"--base-image: {bad_image}")
    if o.host_media is not None and not o.host_media.is_absolute():
        raise GenerateError(f"--host-media must be an absolute path (it is pinned into compose files): {o.host_media}")
    if o.limit is not None and o.limit < 1:
        raise GenerateError("--limit must be >= 1")


def _check_out(out: Path, force: bool, protected_trees: list[Path]) -> None:
    """`out` is the resolved --out (symlinks followed), so a link cannot land a dataset in a tasks tree."""
    if out.exists() or out.is_symlink():
        if not force:
            raise GenerateError(f"{out} already exists; pass --force to replace it")
        if out.is_symlink() or not out.is_dir():
            raise GenerateError(f"{out} exists and is not a directory; refusing to replace it")
        if any(out.iterdir()) and not (out / S.DATASET_MARKER).is_file():
            raise GenerateError(f"{out} exists and was not written by make-harbor (no {S.DATASET_MARKER}); "
                                "refusing to replace it even with --force")
    repo = paths.REPO_ROOT.resolve()
    for protected in (*protected_trees, repo):
        if out == protected or out in protected.parents:
            raise GenerateError(f"--out {out} would replace {protected}")
    for tree in protected_trees:
        if tree in out.parents:
            raise GenerateError(f"--out {out} is inside the tasks tree {tree}; write the dataset elsewhere")


def resolve_out(out: Path) -> Path:
    """--out as an absolute path with every symlink in it followed (the last part too, when it is a
    link: _check_out then refuses it)."""
    literal = Path(os.path.abspath(out.expanduser()))
    if literal.is_symlink():
        return literal
    return Path(os.path.realpath(literal))


_LEFTOVER_KINDS = ("partial", "old")


def remove_leftovers(out: Path) -> list[Path]:
    """Remove `.<name>.partial-<pid>-<ns>` / `.old-...` folders beside `out` that a killed run left
    (only those whose process is gone, so a run writing the same --out right now keeps its own)."""
    removed = []
    pattern = re.compile(r"\A\." + re.escape(out.name) + r"\.(?:" + "|".join(_LEFTOVER_KINDS)
                         + r")-(\d+)-\d+\Z")
    try:
        entries = list(os.scandir(out.parent))
    except OSError:
        return removed
    for entry in entries:
        m = pattern.fullmatch(entry.name)
        if not m or entry.is_symlink() or not entry.is_dir(follow_symlinks=False):
            continue
        if _process_alive(int(m.group(1))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # our own pid cannot have left a folder from a run that is over
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def task_context(game: str, case_id: str, o: Options, gdef: GameDefinition, texts: dict[str, str],
                 seed_bytes: bytes) -> dict[str, Any]:
    """What the templates are rendered with for one case (the validator re-renders task.toml from it)."""
    game_title = gdef.title
    net = S.NET_MODES[o.net]
    kind = "agentic, offline sandbox" if o.protocol == "B" else "one request, sampled frames"
    return dict(
        title=f"Video-Arena {game_title} case {case_id}", protocol=o.protocol, game=game, case_id=case_id,
        game_version=gdef.version,
        net=o.net, media=o.media, task_name=S.task_name(game, case_id), dataset_version=S.DATASET_VERSION,
        description=(f"Protocol {o.protocol} ({kind}): report the events of a whole {game_title} match "
                     "and how each moved the hidden state V_t."),
        max_turns=S.B_MAX_TURNS,
        instruction_sha256=text_digest(texts["instruction.md"]),
        game_instruction_sha256=text_digest(texts.get("environment/instruction.md", "")),
        answer_seed_sha256=sha256_bytes(seed_bytes),
        generator=GENERATOR,
        agent_timeout_sec=S.AGENT_TIMEOUT_SEC[o.protocol],
        agent_network_mode=net.agent,
        verifier_timeout_sec=S.VERIFIER_TIMEOUT_SEC,
        base_image=o.base_image,
        environment_network_mode=net.environment,
        cpus=S.CPUS, memory_mb=S.MEMORY_MB,
        network_none=net.compose_none,
        host_media=o.host_media is not None,
    )


def render_task(case_dir: Path, game: str, case_id: str, o: Options, tasks_root: Path,
                media_root: Path, env: Environment, judge_mod, judge_bytes: bytes,
                score_bytes: bytes) -> dict[str, Any]:
    """Write one task folder; returns its summary (also what case.json records)."""
    r = resolve(game, case_id, tasks_root, media_root)
    gdef = load_game(game, tasks_root)
    seed_bytes = Path(r["answer_seed"]).read_bytes()
    gt_bytes = Path(r["gt"]).read_bytes()
    gt = judge_mod.load_gt(str(r["gt"]))
    oracle = judge_mod.oracle_answer(gt)
    oracle_bytes = (json.dumps(oracle, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    check = judge_mod.reward_of(judge_mod.judge(gt, oracle_bytes))
    if any(v != 1.0 for v in check.values()):
        raise GenerateError(f"{game}/{case_id}: the oracle answer does not score 1.0 with the judge: {check}")

    texts = S.delivered_texts(o.protocol, r["instruction"])
    video_rel = media_rel(game, case_id)
    media_src = Path(r["media"]) if o.host_media is None else TasksTree(tasks_root, o.host_media).media(game, case_id)
    ctx = task_context(game, case_id, o, gdef, texts, seed_bytes)

    # environment/: the agent's side. Only the video, the B task text and the answer seed.
    mounts = []
    media_sha = None
    if o.media == "mount":
        if o.host_media is not None:
            source = str(media_src)
        else:
            source = f"${{{S.MEDIA_ENV}:?{S.MEDIA_ENV_MESSAGE}}}/{video_rel}"
        mounts.append({"source": source, "target": S.MEDIA_TARGET})
        if o.protocol == "B":
            mounts.append({"source": "./instruction.md", "target": S.INSTRUCTION_TARGET})
        mounts.append({"source": "./answer.json", "target": S.SEED_SOURCE_TARGET})
    else:
        if not media_src.is_file():
            raise GenerateError(f"{game}/{case_id}: --media copy needs the video, and {media_src} does not exist")
        media_sha = _copy(media_src, case_dir / "environment" / "match.mp4")
        _write(case_dir / "environment" / "Dockerfile", env.get_template("environment/Dockerfile.j2").render(ctx))
    # every video is the one the tasks tree's manifest records (a swapped or stale video is refused)
    digest = media_sha or (sha256_file(media_src) if media_src.is_file() else None)
    problem = media_digest_problem(game, case_id, digest, tasks_root) if digest else ""
    if problem:
        raise GenerateError(f"{media_src}: {problem}")
    # The game's answer seed, byte for byte (copied or mounted into /app/answer.json).
    _write(case_dir / "environment" / "answer.json", seed_bytes)
    if S.compose_needed(o.media, o.net):
        seed_command = S.SEED_COMMAND if o.media == "mount" else None
        _write(case_dir / "environment" / "docker-compose.yaml",
               env.get_template("environment/docker-compose.yaml.j2").render(
                   dict(ctx, mounts=mounts, seed_command=seed_command)))
    for rel, text in texts.items():
        _write(case_dir / rel, text)

    task_toml = env.get_template("task.toml.j2").render(ctx)
    HT.parse_task_toml(task_toml)  # fail here, not in `harbor run`
    _write(case_dir / "task.toml", task_toml)

    # tests/: the verifier's side only.
    case_doc = {
        "format": S.CASE_FORMAT,
        "task_name": S.task_name(game, case_id),
        "game": game, GAME_VERSION_KEY: gdef.version, "case_id": case_id, "protocol": o.protocol, "net": o.net,
        "media": o.media,
        "media_path": video_rel, "media_sha256": media_sha,
        "instruction_sha256": ctx["instruction_sha256"],
        "game_instruction_sha256": ctx["game_instruction_sha256"] if o.protocol == "B" else None,
        "answer_seed_sha256": ctx["answer_seed_sha256"],
        "gt_sha256": sha256_bytes(gt_bytes),
        "judge_sha256": sha256_bytes(judge_bytes),
        "judge_version": getattr(judge_mod, "JUDGE_VERSION", None),
        "tolerance_s": getattr(judge_mod, "TOLERANCE_S", 3.0),
        "n_gt_events": len(gt.get("events", [])),
        "case": r["case"],
    }
    tests = case_dir / "tests"
    _write(tests / "test.sh", env.get_template("tests/test.sh.j2").render(ctx), 0o755)
    _write(tests / "score_harbor.py", score_bytes)
    _write(tests / "judge.py", judge_bytes)
    _write(tests / "gt.json", gt_bytes)
    _write(tests / "case.json", json.dumps(case_doc, indent=1, ensure_ascii=False) + "\n")

    # solution/: the oracle's side only.
    _write(case_dir / "solution" / "solve.sh", env.get_template("solution/solve.sh.j2").render(ctx), 0o755)
    _write(case_dir / "solution" / "answer.json", oracle_bytes)
    return {"task": S.task_name(game, case_id), "media_exists": media_src.is_file(),
            "media_readable": media_world_readable(media_src)}


def plan_cases(tasks_root: Path, games: list[str] | None, limit: int | None) -> tuple[list[tuple[str, str]], list[str]]:
    """(game, case_id) pairs to generate, and the games that have no cases in this tree."""
    names = games or list_games(tasks_root)
    pairs = [(g, c["case_id"]) for g, c in iter_cases(tasks_root, names, limit)]
    empty = [g for g in names if not load_cases(g, tasks_root)]
    return pairs, empty


def generate(o: Options) -> Result:
    t0 = time.monotonic()
    _check_options(o)
    tasks_root = paths.tasks_root(o.tasks_root)
    media_root = paths.media_root(tasks_root, o.host_media)
    out = resolve_out(o.out)
    protected = sorted({tasks_root, paths.default_tasks_root().resolve()})
    _check_out(out, o.force, protected)
    try:
        pairs, empty = plan_cases(tasks_root, o.games, o.limit)
    except LookupError as exc:
        raise GenerateError(str(exc)) from exc
    if not pairs:
        raise GenerateError(f"no cases to generate in {tasks_root}"
                            + (f" (games without cases: {', '.join(empty)})" if empty else ""))
    try:
        unchecked = [g for g in sorted({g for g, _ in pairs}) if manifest_cases(g, tasks_root) is None]
    except TasksTreeError as exc:
        raise GenerateError(str(exc)) from None
    judge_mod = load_judge()
    judge_bytes = paths.judge_path().read_bytes()
    score_bytes = (templates_dir() / "tests" / "score_harbor.py").read_bytes()
    env = template_env()

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        remove_leftovers(out)
        tmp = out.parent / f".{out.name}.partial-{os.getpid()}-{time.time_ns()}"
        tmp.mkdir()
    except OSError as exc:
        raise GenerateError(f"cannot write the dataset beside {out}: {exc.strerror or exc}") from exc
    result = Result(out=out, skipped_games=empty, unchecked_games=unchecked)
    try:
        with progress_bar(len(pairs), f"make-harbor {o.protocol}", "task", enabled=bool(o.progress)) as bar:
            for game, case_id in bar.wrap(pairs):
                bar.set_postfix(f"{game}-{case_id}", refresh=False)
                info = render_task(tmp / S.task_dir_name(game, case_id), game, case_id, o, tasks_root,
                                   media_root, env, judge_mod, judge_bytes, score_bytes)
                result.tasks.append(info["task"])
                if not info["media_exists"]:
                    result.missing_media.append(media_rel(game, case_id))
                elif o.media == "mount" and not info["media_readable"]:
                    result.unreadable_media.append(str(TasksTree(tasks_root, media_root).media(game, case_id)))
        marker = {
            "format": S.DATASET_FORMAT, "generator": GENERATOR,
            "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "protocol": o.protocol, "net": o.net, "media": o.media, "base_image": o.base_image,
            "base_image_pinned": is_pinned(o.base_image),
            "host_media": o.host_media is not None,
            "agent_timeout_sec": S.AGENT_TIMEOUT_SEC[o.protocol],
            "judge_sha256": sha256_bytes(judge_bytes),
            "n_tasks": len(result.tasks), "tasks": result.tasks,
            "games_without_cases": empty,
        }
        _write(tmp / S.DATASET_MARKER, json.dumps(marker, indent=1) + "\n")
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}-{time.time_ns()}"
            os.rename(out, old)
        os.rename(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    result.seconds = time.monotonic() - t0
    return result


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="video-arena make-harbor", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, type=Path, help="the dataset folder to write (replaced only with --force)")
    ap.add_argument("--protocol", choices=S.PROTOCOLS, default="B", type=str.upper,
                    help="B: agentic, the default; A: one request, run with the ProtocolA agent")
    ap.add_argument("--net", choices=[*S.NET_MODES, *S.OLD_NET_NAMES], default="strict",
                    metavar="{" + ",".join(S.NET_MODES) + "}",
                    help="how offline is enforced: " + "; ".join(f"{m.name}: {m.use}" for m in S.NET_MODES.values()))
    ap.add_argument("--media", choices=S.MEDIA_MODES, default="mount",
                    help=f"mount: compose mounts ${S.MEDIA_ENV}/<game>/media/<case_id>.mp4 read-only (Docker only); "
                         "copy: bake the video into a task-local environment/Dockerfile (lint-clean, cloud environments)")
    ap.add_argument("--host-media", type=Path, default=None, metavar="PATH",
                    help=f"mount mode: pin this absolute tasks tree into the compose files instead of ${S.MEDIA_ENV}; "
                         "copy mode: read the videos from here")
    ap.add_argument("--base-image", default=S.DEFAULT_BASE_IMAGE, metavar="IMAGE",
                    help=f"the sandbox image (default {S.DEFAULT_BASE_IMAGE}); for a cluster, the pinned "
                         "REGISTRY/NAME@sha256:<64 hex> that `video-arena image push` prints")
    ap.add_argument("--force", action="store_true", help="replace an existing dataset at --out")
    ap.add_argument("--games", default=None, help="comma-separated games (default: every game with cases)")
    ap.add_argument("--limit", type=int, default=None, metavar="N", help="the first N cases of each game")
    ap.add_argument("--tasks-root", type=Path, default=None,
                    help=f"the tasks tree (default ${paths.TASKS_ROOT_ENV} or the checkout's tasks/)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    return ap


def options_from_args(a: argparse.Namespace) -> Options:
    games = comma_list(a.games) if a.games else None
    host_media = a.host_media.expanduser() if a.host_media else None  # must be absolute (checked)
    return Options(out=a.out, protocol=a.protocol, net=a.net, media=a.media, base_image=a.base_image,
                   host_media=host_media, tasks_root=a.tasks_root, games=games, limit=a.limit,
                   force=a.force, progress=not a.no_progress)


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.net in S.OLD_NET_NAMES:
        print(f"make-harbor: --net {a.net} is named --net {S.OLD_NET_NAMES[a.net]} now", file=sys.stderr)
        return 2
    try:
        res = generate(options_from_args(a))
    except (GenerateError, FileNotFoundError, ValueError) as exc:
        print(f"make-harbor: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # disk full, a folder that became unwritable half-way: nothing was kept
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"make-harbor: error: cannot write the dataset: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    print(f"wrote {len(res.tasks)} Protocol {a.protocol} tasks to {res.out} in {res.seconds:.1f} s "
          f"(--net {a.net}, --media {a.media}, image {a.base_image})")
    if res.skipped_games:
        print(f"games without cases (no tasks): {', '.join(res.skipped_games)}")
    if res.missing_media:
        print(f"warning: {len(res.missing_media)} videos are not under the media root yet, e.g. "
              f"{res.missing_media[0]}; trials of those tasks will not start until they exist", file=sys.stderr)
    if res.unchecked_games:
        print(f"warning: no manifest.json for {', '.join(res.unchecked_games)} in the tasks tree: those videos are "
              f"not checked against a recorded digest", file=sys.stderr)
    if res.unreadable_media:
        print(f"warning: {len(res.unreadable_media)} videos are not readable by other users (the sandbox's "
              f"agent user cannot open them), e.g. {res.unreadable_media[0]}; fix with "
              f"chmod a+r <tasks>/*/media/*.mp4", file=sys.stderr)
    if a.media == "mount" and a.host_media is None:
        pin_flag = " --require-pinned" if is_pinned(a.base_image) else ""
        print(f"next: python validate_harbor.py {res.out}{pin_flag}; export {S.MEDIA_ENV}=<the tasks tree>; "
              f"harbor run -p {res.out} -a oracle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
