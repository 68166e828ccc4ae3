"""`video-arena validate DIR` (and the top-level validate_harbor.py): check a generated Harbor dataset
offline, without Docker, before any trial runs.

    video-arena validate harbor/video-arena [--tasks-root tasks]

For every task folder under DIR (or DIR itself when it is one task):

  * Harbor's own models accept it: TaskConfig, Task(dir) (the loader `harbor run` uses) and
    Task.is_valid_dir (what `-p DATASET` uses; invalid folders are skipped there *silently*);
  * the verifier is separate and runs as root, the agent is `agent` (never root), the only artifact is
    /app/answer.json, budget, resources and network modes are the generator's (docs/HARBOR.md);
  * task.toml is, key for key, what make-harbor renders for the case: no [environment.env],
    [verifier.env] or [solution.env], no docker_image (copy mode: Dockerfile FROM) other than the base
    image the dataset marker declares, no mcp_servers, skills_dir, healthcheck, [verifier.environment],
    [[verifier.collect]] or [[steps]];
  * the base image reference is well-formed; in a dataset made pinned (--base-image NAME@sha256:...)
    it is that exact pin and Harbor's unpinned-image rule runs too; --require-pinned refuses any tag
    (without it a tag is one note, fine on a single host);
  * no symlink (to a file or a folder), FIFO or device anywhere in the task folder;
  * `harbor lint` (harbor.lint.lint_task, default rules + root-agent) finds nothing, except the
    documented compose-external-bind-mount of the video in mount mode. The compose rules need the
    Docker CLI and its compose plugin (no daemon); without them they are skipped and that is said;
  * the agent's side (environment/ and what the compose file mounts or the Dockerfile copies) holds
    only the video, the B task text and the answer seed: no ground truth, solution or judge;
  * the answer seed is byte-identical to the game's answer_seed.json; the delivered instruction texts
    have the digests of instruction_for(...) (A: "video"; B: the turn-1 prompt + "agentic");
  * tests/ holds the checkout's judge.py and score_harbor.py byte for byte and the tasks tree's ground
    truth; solution/ holds only solve.sh and answer.json; the oracle's answer is the ground truth on the
    answer schema and scores 1.0 on all four keys.

Each bad folder is named with every problem found; the exit status is 1 if any folder is bad.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import tomllib
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from video_arena import paths
from video_arena.progress import Bar, bar as progress_bar
from video_arena.core import resolve, text_digest
from video_arena.harbor import environment_files as EF
from video_arena.harbor import spec as S
from video_arena.digests import sha256_bytes, sha256_file
from video_arena.core import load_game
from video_arena.core.tasks import gt_rel, media_digest_problem, media_rel
from video_arena.harbor.generate import (Options, media_world_readable, task_context, template_env,
                                         templates_dir)
from video_arena.container_host.registry import check_base_image, is_pinned
from video_arena.core.judge_loader import load_judge
from video_arena.harbor_api import speedups as HS
from video_arena.harbor_api import task_models as HT
from video_arena.core.case_origins import case_origins, public_warning

_DIR_RE = re.compile(r"\A([a-z0-9][a-z0-9_]*)-([A-Za-z0-9]{8})\Z")


@dataclass
class TaskReport:
    path: Path
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def compose_available() -> bool:
    """True when `docker compose` (the CLI plugin) answers; lint's compose rules need it."""
    if shutil.which("docker") is None:
        return False
    try:
        r = subprocess.run(["docker", "compose", "version", "--short"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def regular_files(root: Path) -> list[str]:
    """Every regular file under root (relative, '/'-separated), never following a symlink."""
    out = []
    for top, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            p = os.path.join(top, name)
            if stat.S_ISREG(os.lstat(p).st_mode):
                out.append(os.path.relpath(p, root).replace(os.sep, "/"))
    return sorted(out)


def find_tasks(root: Path) -> list[Path]:
    """The task folders under root (root itself if it is one)."""
    if (root / "task.toml").is_file():
        return [root]
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


#: task.toml keys a named check below already reports; the catch-all re-render comparison skips them.
_NAMED_KEYS = ("environment.env", "verifier.env", "environment.docker_image", "environment.mcp_servers",
               "environment.skills_dir", "environment.healthcheck", "agent.user", "verifier.user",
               "verifier.environment_mode", "artifacts", "agent.timeout_sec", "environment.cpus",
               "environment.memory_mb", "environment.network_mode", "agent.network_mode", "metadata.protocol",
               "metadata.net", "metadata.media", "metadata.game", "metadata.case_id", "task.name",
               "metadata.answer_seed_sha256")
_GT_HINTS = ('"v_before"', '"v_after"', "v_before", "v_after", "/gt/", "gt.json", "tests/", "solution/")


def _flatten(obj, prefix: str = "") -> dict[str, object]:
    """{"a": {"b": 1}} -> {"a.b": 1}; lists and scalars are leaves (an empty table is a leaf too)."""
    if isinstance(obj, dict) and obj:
        out: dict[str, object] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: obj}


def _short(value, n: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= n else text[:n - 3] + "..."


def declared_base_image(dataset: Path) -> str:
    """The base image make-harbor was told to use: the dataset marker's, else the default."""
    try:
        marker = json.loads((dataset / S.DATASET_MARKER).read_text(encoding="utf-8"))
        image = marker.get("base_image") if isinstance(marker, dict) else None
    except (OSError, ValueError):
        image = None
    return image if isinstance(image, str) and image else S.DEFAULT_BASE_IMAGE


def marker_pin_problems(dataset: Path) -> list[str]:
    """The dataset marker's base image must be a well-formed reference, and its `base_image_pinned`
    (written since make-harbor pins) must agree with it: an edit that unpins one but not the other is
    reported instead of trusted."""
    try:
        marker = json.loads((dataset / S.DATASET_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"{S.DATASET_MARKER} is unreadable: {exc}"]
    image = marker.get("base_image") if isinstance(marker, dict) else None
    if image is None:
        return []
    if not isinstance(image, str) or check_base_image(image):
        return [f"{S.DATASET_MARKER} base_image: {check_base_image(image) if isinstance(image, str) else repr(image)}"]
    flag = marker.get("base_image_pinned")
    if flag is not None and flag is not is_pinned(image):
        return [f"{S.DATASET_MARKER} says base_image_pinned={flag} but its base_image {image!r} is "
                + ("not " if flag else "") + "a digest pin"]
    return []


class Validator:
    def __init__(self, tasks_root: Path, with_compose: bool, base_image: str | None = None,
                 require_pinned: bool = False):
        self.tasks_root = tasks_root
        self.with_compose = with_compose
        #: every task's base image must be REGISTRY/NAME@sha256:<64 hex> (cluster use), not a tag
        self.require_pinned = require_pinned
        #: None: each task's dataset marker (its parent folder) declares it (else the default image)
        self.base_image = base_image
        #: load compose files of many tasks in one `docker compose config` run (False: one per task);
        #: like memo_harbor, only with the Harbor release the seam pins (harbor_api/speedups.py)
        self.batch_compose = True
        #: memoise Harbor's path filter per task while it is checked (False: Harbor's code as it is)
        self.memo_harbor = True
        self.compose_runs = 0
        self.judge = load_judge()
        self.judge_bytes = paths.judge_path().read_bytes()
        self.score_bytes = (templates_dir() / "tests" / "score_harbor.py").read_bytes()
        self.env = template_env()

    def _lint_env(self):
        """Lint interpolates the compose files' ${VA_MEDIA_ROOT:?...}: the tasks tree's media root stands
        in while it runs when the user has not set it."""
        return HT.lint_environment(S.MEDIA_ENV, str(paths.media_root(self.tasks_root)))

    # -- one task ------------------------------------------------------------------------------
    def check(self, task_dir: Path) -> TaskReport:
        rep = TaskReport(task_dir)
        try:
            memo = HS.memoised_filters(task_dir) if self.memo_harbor else contextlib.nullcontext()
            with self._lint_env(), memo:
                self._check(task_dir, rep)
        except Exception as exc:  # a check that cannot even run is a problem, never a pass
            rep.problems.append(f"validator could not finish: {type(exc).__name__}: {exc}")
        return rep

    def _check(self, d: Path, rep: TaskReport) -> None:
        P = rep.problems
        m = _DIR_RE.fullmatch(d.name)
        if not m:
            P.append(f"folder name {d.name!r} is not <game>-<case_id>")
            return
        game, case_id = m.groups()
        self._check_links(d, P)
        try:
            raw = tomllib.loads((d / "task.toml").read_text(encoding="utf-8"))
            cfg = HT.parse_task_config(raw)
        except Exception as exc:
            P.append(f"task.toml does not parse with Harbor's TaskConfig: {exc}")
            return
        try:
            task = HT.load_task(d)
        except Exception as exc:
            P.append(f"Harbor's Task() rejects the folder: {type(exc).__name__}: {exc}")
            return
        if not HT.is_valid_task_dir(d):
            P.append("Task.is_valid_dir() is False: `harbor run -p DATASET` would skip it silently")

        meta = cfg.metadata or {}
        protocol, net, media = meta.get("protocol"), meta.get("net"), meta.get("media")
        if protocol not in S.PROTOCOLS or net not in S.NET_MODES or media not in S.MEDIA_MODES:
            P.append(f"[metadata] protocol/net/media are {protocol!r}/{net!r}/{media!r}")
            return
        if (meta.get("game"), meta.get("case_id")) != (game, case_id):
            P.append(f"[metadata] names {meta.get('game')}/{meta.get('case_id')}, the folder {game}/{case_id}")
        if task.name != S.task_name(game, case_id):
            P.append(f"[task].name is {task.name!r}, expected {S.task_name(game, case_id)!r}")

        # -- Harbor semantics: users, verifier, budget, network, resources
        if HT.verifier_mode(cfg) != "separate":
            P.append("the verifier is not separate")
        if cfg.agent.user in (None, "root", 0, "0"):
            P.append(f"the agent runs as root (user={cfg.agent.user!r})")
        elif cfg.agent.user != "agent":
            P.append(f"[agent].user is {cfg.agent.user!r}, expected 'agent'")
        if cfg.verifier.user not in ("root", 0):
            P.append(f"[verifier].user is {cfg.verifier.user!r}, expected root")
        arts = [a if isinstance(a, str) else a.source for a in cfg.artifacts]
        if arts != [S.ANSWER_PATH]:
            P.append(f"artifacts are {arts}, expected [{S.ANSWER_PATH!r}]")
        if cfg.agent.timeout_sec != S.AGENT_TIMEOUT_SEC[protocol]:
            P.append(f"[agent].timeout_sec is {cfg.agent.timeout_sec}, Protocol {protocol} is {S.AGENT_TIMEOUT_SEC[protocol]}")
        if (cfg.environment.cpus, cfg.environment.memory_mb) != (S.CPUS, S.MEMORY_MB):
            P.append(f"resources are {cfg.environment.cpus} CPUs / {cfg.environment.memory_mb} MB, "
                     f"expected {S.CPUS} / {S.MEMORY_MB}")
        mode = S.NET_MODES[net]
        env_net = cfg.environment.network_mode.value
        agent_net = cfg.agent.network_mode.value if cfg.agent.network_mode else None
        if (env_net, agent_net) != (mode.environment, mode.agent):
            P.append(f"--net {net} needs [environment]/[agent] network_mode {mode.environment}/{mode.agent}, "
                     f"found {env_net}/{agent_net}")
        if media == "mount" and not cfg.environment.docker_image:
            P.append("mount mode needs [environment].docker_image")
        if media == "copy" and cfg.environment.docker_image:
            P.append("copy mode must not set docker_image (Harbor would use it instead of environment/Dockerfile)")

        base_image = self.base_image or declared_base_image(d.parent)
        if media == "mount" and cfg.environment.docker_image and cfg.environment.docker_image != base_image:
            P.append(f"[environment].docker_image is {cfg.environment.docker_image!r}, not the declared base image "
                     f"{base_image!r}")
        self._check_pin(d, media, cfg.environment.docker_image, base_image, P, rep)
        self._check_extras(cfg, P)

        # -- the tasks tree: what this task must deliver
        try:
            r = resolve(game, case_id, self.tasks_root)
        except LookupError as exc:
            P.append(f"not in the tasks tree {self.tasks_root}: {exc}")
            return
        seed = Path(r["answer_seed"]).read_bytes()
        self._check_rerender(raw, game, case_id, protocol, net, media, base_image, r, seed, P)
        self._check_texts(d, protocol, r, P)
        self._check_agent_side(d, protocol, net, media, game, case_id, seed, r, P, rep, base_image)
        self._check_verifier_side(d, protocol, game, case_id, seed, r, P)
        self._check_solution(d, protocol, P)
        self._check_lint(d, media, P, rep, pinned=is_pinned(base_image))

    def _check_pin(self, d: Path, media: str, docker_image: str | None, base_image: str, P: list[str],
                   rep: TaskReport) -> None:
        """The task's base image reference (mount: docker_image; copy: the Dockerfile's FROM) must be a
        well-formed reference; a pinned dataset's (or, with require_pinned, any) must be a digest pin."""
        used = docker_image
        if media == "copy":
            froms = [ln.split()[1:] for ln in EF.read_lines(d / "environment" / "Dockerfile")
                     if ln.split()[:1] and ln.split()[0].upper() == "FROM"]
            used = froms[0][0] if len(froms) == 1 and len(froms[0]) == 1 else None
        if not used:
            return  # a missing image / a malformed FROM is reported by the checks that expect them
        where = "environment/Dockerfile FROM" if media == "copy" else "[environment].docker_image"
        bad = check_base_image(used)
        if bad:
            P.append(f"{where}: {bad}")
        elif is_pinned(used):
            rep.notes.append(f"base image pinned to {used}")
        elif is_pinned(base_image):
            P.append(f"{where} {used!r} is unpinned (a tag), but the dataset was made pinned to {base_image}")
        elif self.require_pinned:
            P.append(f"{where} {used!r} is unpinned (a tag names whatever was pushed last): push with "
                     "`video-arena image push` and regenerate with --base-image REGISTRY/NAME@sha256:<64 hex>")
        else:
            rep.notes.append(f"{UNPINNED_NOTE}{used}")

    def _check_extras(self, cfg, P: list[str]) -> None:
        """What make-harbor never writes and an agent could use: env vars, a second image, MCP servers,
        skills, healthchecks (each runs or is visible in a container, before or beside the agent)."""
        for section, env in (("environment", cfg.environment.env), ("verifier", cfg.verifier.env),
                             ("solution", cfg.solution.env)):
            for key, value in sorted((env or {}).items()):
                gt = any(h in f"{key}={value}" for h in _GT_HINTS)
                P.append(f"[{section}.env] sets {key}{' (it names or holds ground truth)' if gt else ''}: "
                         f"make-harbor writes no [{section}.env]; "
                         + ("it reaches the agent's container and compose interpolation"
                            if section == "environment" else "nothing but the generator's files may steer the "
                            + ("verifier" if section == "verifier" else "oracle")))
        envs = [("environment", cfg.environment)]
        if cfg.verifier.environment is not None:
            P.append("[verifier.environment] is set: the verifier must run in a fresh copy of [environment]")
            envs.append(("verifier.environment", cfg.verifier.environment))
        for name, e in envs:
            if e.mcp_servers:
                P.append(f"[{name}].mcp_servers is set ({', '.join(m.name for m in e.mcp_servers)}): "
                         "a tool the agent could reach beyond its sandbox")
            if e.skills_dir:
                P.append(f"[{name}].skills_dir is set ({e.skills_dir!r}): files handed to the agent")
            if e.healthcheck is not None:
                P.append(f"[{name}].healthcheck is set ({e.healthcheck.command!r}): a command run in the "
                         "agent's container before the agent")
        if cfg.verifier.collect:
            P.append("[[verifier.collect]] is set: commands run in the agent's container after the agent phase")
        if cfg.steps:
            P.append("[[steps]] is set: a Video-Arena task is single-step")

    def _check_rerender(self, raw: dict, game: str, case_id: str, protocol: str, net: str, media: str,
                        base_image: str, r: dict, seed: bytes, P: list[str]) -> None:
        """The catch-all: task.toml must be what make-harbor renders for this case, key for key."""
        o = Options(out=Path("."), protocol=protocol, net=net, media=media, base_image=base_image)
        gdef = load_game(game, self.tasks_root)
        ctx = task_context(game, case_id, o, gdef, S.delivered_texts(protocol, r["instruction"]), seed)
        want = _flatten(tomllib.loads(self.env.get_template("task.toml.j2").render(ctx)))
        have = _flatten(raw)
        for key in sorted(set(want) | set(have)):
            if any(key == n or key.startswith(n + ".") for n in _NAMED_KEYS):
                continue
            if key not in want:
                P.append(f"task.toml sets {key} = {_short(have[key])}, which make-harbor never writes")
            elif key not in have:
                P.append(f"task.toml lacks {key} (make-harbor writes {_short(want[key])})")
            elif have[key] != want[key] or type(have[key]) is not type(want[key]):
                P.append(f"task.toml {key} is {_short(have[key])}, make-harbor writes {_short(want[key])}")

    def _check_links(self, d: Path, P: list[str]) -> None:
        """No symlink (to a file or a folder) and nothing but folders and regular files anywhere in the task:
        make-harbor writes none, and a link in environment/ can hand the agent any path of the host."""
        base = os.fspath(d)
        for top, dirs, files in os.walk(base, followlinks=False):
            for name in sorted(dirs + files):
                p = os.path.join(top, name)
                rel = os.path.relpath(p, base).replace(os.sep, "/")
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    P.append(f"{rel} is a symlink (to {os.readlink(p)!r}): make-harbor writes none"
                             + (", and on the agent's side it can reach any path" if rel.startswith("environment/")
                                else ""))
                elif not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                    P.append(f"{rel} is neither a folder nor a regular file")

    def _check_texts(self, d: Path, protocol: str, r: dict, P: list[str]) -> None:
        for rel, expected in S.delivered_texts(protocol, r["instruction"]).items():
            f = d / rel
            if not f.is_file():
                P.append(f"{rel} is missing")
                continue
            got = text_digest(f.read_bytes().decode("utf-8", "replace"))
            if got != text_digest(expected):
                what = {"instruction.md": "A: instruction_for('video')" if protocol == "A"
                        else "B: the turn-1 prompt pointing at /app",
                        "environment/instruction.md": "instruction_for('agentic')"}[rel]
                P.append(f"{rel} digest {got[:12]} is not that of {what} ({text_digest(expected)[:12]})")
        if protocol == "A" and (d / "environment" / "instruction.md").exists():
            P.append("environment/instruction.md exists in a Protocol A task (A mounts only match.mp4)")

    def _check_agent_side(self, d: Path, protocol: str, net: str, media: str, game: str, case_id: str,
                          seed: bytes, r: dict, P: list[str], rep: TaskReport, base_image: str) -> None:
        envdir = d / "environment"
        files = regular_files(envdir)  # symlinks are reported by _check_links and never followed
        allowed = {"answer.json"}
        if S.compose_needed(media, net):
            allowed.add("docker-compose.yaml")
        if protocol == "B":
            allowed.add("instruction.md")
        if media == "copy":
            allowed |= {"Dockerfile", "match.mp4"}
        for f in files:
            if f not in allowed:
                P.append(f"environment/{f} is on the agent's side and is not one of {sorted(allowed)}")
        for f in sorted(allowed):
            if not (envdir / f).is_file():
                P.append(f"environment/{f} is missing")
        # Secrets by content, whatever their names: the ground truth, the judge, the solution.
        secrets = {"tests/gt.json": d / "tests" / "gt.json", "tests/judge.py": d / "tests" / "judge.py",
                   "solution/answer.json": d / "solution" / "answer.json",
                   "solution/solve.sh": d / "solution" / "solve.sh", "tasks gt": Path(r["gt"])}
        secret_sha: dict[str, str] = {}
        for name, p in secrets.items():
            if p.is_file():
                secret_sha.setdefault(sha256_file(p), name)
        for f in files:
            p = envdir / f
            if p.stat().st_size < (1 << 26) and sha256_file(p) in secret_sha:
                P.append(f"environment/{f} is a copy of {secret_sha[sha256_file(p)]}: it would reach the agent")
        gt_events = json.loads(Path(r["gt"]).read_text(encoding="utf-8")).get("events") or []
        for f in files:
            if f.endswith((".json", ".md", ".yaml", ".txt")) and gt_events:
                text = (envdir / f).read_text(encoding="utf-8", errors="replace")
                if '"v_before"' in text or '"v_after"' in text:
                    P.append(f"environment/{f} holds ground-truth rows (v_before/v_after)")
        seed_file = envdir / "answer.json"
        if seed_file.is_file() and seed_file.read_bytes() != seed:
            P.append(f"environment/answer.json (the answer seed) is not byte-identical to {game}/answer_seed.json")
        video = Path(r["media"])  # where $VA_MEDIA_ROOT (or the tasks tree) has it
        if media == "copy":
            EF.check_dockerfile(envdir / "Dockerfile", protocol, base_image, P)
            mp4 = envdir / "match.mp4"
            if mp4.is_file() and video.is_file() and sha256_file(mp4) != sha256_file(video):
                P.append(f"environment/match.mp4 differs from {media_rel(game, case_id)}")
            video = mp4
        if media == "mount" and video.is_file() and not media_world_readable(video):
            P.append(f"{video} is not readable by other users: the sandbox's agent user gets "
                     "'Permission denied' on /app/match.mp4 (chmod a+r it)")
        # the video the trial gets is the one the tasks tree's manifest records for this case
        if video.is_file() and not video.is_symlink():
            problem = media_digest_problem(game, case_id, sha256_file(video), self.tasks_root)
            if problem:
                P.append(problem)
        compose = envdir / "docker-compose.yaml"
        if compose.is_file():
            EF.check_compose(compose, protocol, net, media, game, case_id, P, rep.notes)
        cfg_seed = tomllib.loads((d / "task.toml").read_text(encoding="utf-8")).get("metadata", {}).get("answer_seed_sha256")
        if cfg_seed != sha256_bytes(seed):
            P.append(f"[metadata].answer_seed_sha256 is not the SHA-256 of {game}/answer_seed.json")

    def _check_verifier_side(self, d: Path, protocol: str, game: str, case_id: str, seed: bytes, r: dict,
                             P: list[str]) -> None:
        tests = d / "tests"
        want = {"test.sh", "score_harbor.py", "judge.py", "gt.json", "case.json"}
        have = set(regular_files(tests))
        if have != want:
            P.append(f"tests/ holds {sorted(have)}, expected {sorted(want)}")
        if (tests / "judge.py").is_file() and (tests / "judge.py").read_bytes() != self.judge_bytes:
            P.append("tests/judge.py is not a byte copy of judge/judge.py")
        if (tests / "score_harbor.py").is_file() and (tests / "score_harbor.py").read_bytes() != self.score_bytes:
            P.append("tests/score_harbor.py is not a byte copy of harbor_templates/tests/score_harbor.py")
        test_sh = tests / "test.sh"
        if test_sh.is_file():
            expected_sh = self.env.get_template("tests/test.sh.j2").render(protocol=protocol)
            if test_sh.read_text(encoding="utf-8") != expected_sh:
                P.append("tests/test.sh differs from harbor_templates/tests/test.sh.j2")
            if not os.access(test_sh, os.X_OK):
                P.append("tests/test.sh is not executable")
        gt_file = tests / "gt.json"
        if gt_file.is_file() and Path(r["gt"]).is_file() and gt_file.read_bytes() != Path(r["gt"]).read_bytes():
            P.append(f"tests/gt.json is not the tasks tree's {gt_rel(game, case_id)}")
        try:
            case = json.loads((tests / "case.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            P.append(f"tests/case.json: {exc}")
            return
        for k, v in {"game": game, "case_id": case_id, "protocol": protocol,
                     "answer_seed_sha256": sha256_bytes(seed)}.items():
            if case.get(k) != v:
                P.append(f"tests/case.json {k} is {case.get(k)!r}, expected {v!r}")

    def _check_solution(self, d: Path, protocol: str, P: list[str]) -> None:
        sol, gt_file = d / "solution" / "answer.json", d / "tests" / "gt.json"
        extra = sorted(set(regular_files(d / "solution")) - {"solve.sh", "answer.json"})
        if extra:  # e.g. a .harborignore that hides solve.sh from the oracle
            P.append(f"solution/ holds {extra} beside solve.sh and answer.json")
        if not sol.is_file() or not gt_file.is_file():
            P.append("solution/answer.json or tests/gt.json is missing")
            return
        solve = d / "solution" / "solve.sh"
        expected_sh = self.env.get_template("solution/solve.sh.j2").render(protocol=protocol)
        if not solve.is_file() or solve.read_text(encoding="utf-8") != expected_sh:
            P.append("solution/solve.sh is missing or differs from harbor_templates/solution/solve.sh.j2")
        gt = self.judge.load_gt(str(gt_file))
        data = sol.read_bytes()
        try:
            if json.loads(data) != self.judge.oracle_answer(gt):
                P.append("solution/answer.json is not the ground truth projected on the answer schema")
        except ValueError as exc:
            P.append(f"solution/answer.json is not JSON: {exc}")
        rewards = self.judge.reward_of(self.judge.judge(gt, data))
        if any(rewards.get(k) != 1.0 for k in self.judge.REWARD_KEYS):
            P.append(f"the oracle answer does not score 1.0 with the judge: {rewards}")

    def _check_lint(self, d: Path, media: str, P: list[str], rep: TaskReport, pinned: bool = False) -> None:
        # pinned: Harbor's own check of docker_image / FROM (off by default) too
        rules = HT.lint_rules(self.with_compose, pinned=pinned or self.require_pinned)
        for f in HT.lint(d, rules):
            where = f"{Path(f.path).relative_to(d) if f.path and Path(f.path).is_relative_to(d) else f.path}"
            expected = (media == "mount" and f.rule == HT.COMPOSE_EXTERNAL_BIND_MOUNT
                        and "volumes[0]" in f.message)
            if expected:
                rep.notes.append("lint: compose-external-bind-mount of the video (expected in mount mode)")
            else:
                P.append(f"harbor lint [{f.rule}] {where}: {f.message}")

    # -- the whole dataset ---------------------------------------------------------------------
    def check_dataset(self, root: Path, jobs: int = 2, progress: bool = True,
                      processes: bool | None = None) -> tuple[list[TaskReport], list[str]]:
        """Check every task folder under root. `processes`: check in `jobs` forked worker processes
        (Harbor's own checks are pure Python, so threads share one core); None: when there are at
        least two tasks per job and the platform can fork."""
        dataset_problems = []
        tasks = find_tasks(root)
        if not tasks:
            dataset_problems.append(f"{root} holds no task folders")
        marker = root / S.DATASET_MARKER
        if tasks and tasks != [root]:
            if not marker.is_file():
                dataset_problems.append(f"{root} has no {S.DATASET_MARKER}: not written by make-harbor")
            else:
                dataset_problems += marker_pin_problems(root)
                listed = sorted(json.loads(marker.read_text(encoding="utf-8")).get("tasks", []))
                found = sorted(f"{S.TASK_ORG}/{p.name}" for p in tasks)
                if listed != found:
                    dataset_problems.append(f"{S.DATASET_MARKER} lists {len(listed)} tasks, the folder holds "
                                            f"{len(found)}: missing {sorted(set(listed) - set(found))[:5]}, "
                                            f"extra {sorted(set(found) - set(listed))[:5]}")
        batch = HS.ComposeBatch()
        with self._lint_env(), batch.installed():
            if self.with_compose and self.batch_compose:
                batch.prefetch([(t / "environment" / "docker-compose.yaml", main) for t in tasks
                                if (main := EF.batchable_compose(t)) is not None])
            if processes is None:
                processes = jobs > 1 and len(tasks) >= 2 * jobs
            processes = processes and "fork" in multiprocessing.get_all_start_methods()
            with progress_bar(len(tasks), "validate", "task", enabled=progress) as bar:
                if processes:
                    reports = self._check_in_processes(tasks, jobs, bar)
                else:
                    with ThreadPoolExecutor(max(1, jobs)) as pool:
                        reports = list(bar.wrap(pool.map(self.check, tasks)))
        self.compose_runs = batch.runs
        return reports, dataset_problems


    def _check_in_processes(self, tasks: list[Path], jobs: int, bar: Bar) -> list[TaskReport]:
        """Forked workers inherit this validator (judge, templates, the compose batch's results) as it is."""
        global _WORKER
        _WORKER = self
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # fork with the pool's own thread
                with ProcessPoolExecutor(max(1, jobs), mp_context=multiprocessing.get_context("fork")) as pool:
                    return list(bar.wrap(pool.map(_check_in_worker, tasks, chunksize=4)))
        finally:
            _WORKER = None


_WORKER: Validator | None = None
UNPINNED_NOTE = "unpinned base image: "


def _check_in_worker(task: Path) -> TaskReport:
    assert _WORKER is not None
    return _WORKER.check(task)


def public_match_warnings(reports: list[TaskReport], tasks_root: Path) -> list[str]:
    """A warning line per task whose case is an imported record of a built-in case's match (its manifest
    entry's `public_match`, importing/contamination.py): a public match, not a private case."""

    out, origins = [], {}
    for rep in reports:
        m = _DIR_RE.fullmatch(rep.path.name)
        if not m:
            continue
        game, case_id = m.groups()
        if game not in origins:
            origins[game] = case_origins(tasks_root, game)
        origin = origins[game].get(case_id, "")
        if origin.startswith("public:"):
            out.append(f"warning {rep.path.name}: {public_warning(game, case_id, origin.split(':', 1)[1])}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="video-arena validate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", type=Path, help="a dataset folder from make-harbor (or one task folder)")
    ap.add_argument("--tasks-root", type=Path, default=None,
                    help=f"the tasks tree it was generated from (default ${paths.TASKS_ROOT_ENV} or the checkout's tasks/)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (threads for small datasets) checking folders at once")
    ap.add_argument("--no-compose", action="store_true", help="skip lint's compose rules even if docker compose is present")
    ap.add_argument("--require-pinned", action="store_true",
                    help="a base image given by tag (not REGISTRY/NAME@sha256:...) is an error, not a note (cluster use)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true", help="also print notes for good folders")
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    root = a.dataset.resolve()
    if not root.is_dir():
        print(f"validate: {root} is not a directory", file=sys.stderr)
        return 1
    with_compose = not a.no_compose and compose_available()
    if not with_compose:
        print("validate: note: docker compose is not available, so harbor lint's compose rules are skipped "
              "(the compose files are still checked by this validator)", file=sys.stderr)
    v = Validator(paths.tasks_root(a.tasks_root), with_compose, require_pinned=a.require_pinned)
    reports, dataset_problems = v.check_dataset(root, a.jobs, progress=not a.no_progress)
    bad = [r for r in reports if not r.ok]
    for p in dataset_problems:
        print(f"BAD dataset {root}: {p}")
    for rep in bad:
        print(f"BAD {rep.path}:")
        for p in rep.problems:
            print(f"    - {p}")
    if a.verbose:
        for rep in reports:
            for n in sorted(set(rep.notes)):
                print(f"note {rep.path.name}: {n}")
    for line in public_match_warnings(reports, v.tasks_root):
        print(line)
    unpinned = sorted({n[len(UNPINNED_NOTE):] for r in reports for n in r.notes if n.startswith(UNPINNED_NOTE)})
    if unpinned:
        print(f"note: the base image {', '.join(unpinned)} is a tag, not a digest: each Docker host runs "
              "whatever it names there (fine on one machine; for a cluster, `video-arena image push` and "
              "--base-image REGISTRY/NAME@sha256:..., then validate --require-pinned)")
    status = "FAILED" if bad or dataset_problems else "OK"
    print(f"validate {status}: {len(reports)} task folders, {len(reports) - len(bad)} good, {len(bad)} bad "
          f"({'with' if with_compose else 'without'} compose lint) in {time.monotonic() - t0:.1f} s")
    return 1 if bad or dataset_problems else 0


if __name__ == "__main__":
    sys.exit(main())
