"""The agent side's container files of a task, against the generator's shapes: the Dockerfile of a
copy-mode task, the compose file (its services, network mode and bind mounts), and which compose files
validate may load in one `docker compose config` run (video_arena/harbor_api/speedups.py).
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

from video_arena.core.tasks import media_rel
from video_arena.harbor import spec as S

#: A mount-mode video source: ${VA_MEDIA_ROOT:?...}/<game>/media/<case_id>.mp4
MEDIA_SOURCE_RE = re.compile(r"\A\$\{" + S.MEDIA_ENV + r":\?[^}]*\}/(.+)\Z")


def load_yaml(text: str):
    """yaml.safe_load with libyaml's parser when PyYAML has it (the same safe constructor, ~10x faster)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


COMPOSE_MAIN_KEYS = {"entrypoint", "network_mode", "volumes", "command"}


def batchable_compose(task_dir: Path) -> dict | None:
    """The `main` service of a task's compose file when loading it together with other tasks' gives
    `docker compose config` exactly the inputs it gets alone: only services.main with the generator's
    keys, no environment/.env, no [environment].env, and no `${...}` but the video's
    ${VA_MEDIA_ROOT:?...} (the only variable whose value is the same for every task). Else None:
    that task's compose file is loaded on its own, as `harbor lint` does."""
    envdir = task_dir / "environment"
    path = envdir / "docker-compose.yaml"
    try:
        if (envdir / ".env").exists() or path.is_symlink() or not path.is_file():
            return None
        text = path.read_text(encoding="utf-8")
        raw = tomllib.loads((task_dir / "task.toml").read_text(encoding="utf-8"))
        doc = load_yaml(text)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    if (raw.get("environment") or {}).get("env") or (raw.get("verifier") or {}).get("environment"):
        return None
    if not isinstance(doc, dict) or set(doc) != {"services"} or not isinstance(doc["services"], dict):
        return None
    if set(doc["services"]) != {"main"} or not isinstance(doc["services"]["main"], dict):
        return None
    main = doc["services"]["main"]
    if not set(main) <= COMPOSE_MAIN_KEYS:
        return None
    dollars = [v.get("source") for v in main.get("volumes") or [] if isinstance(v, dict)]
    allowed = sum(1 for src in dollars if isinstance(src, str) and MEDIA_SOURCE_RE.fullmatch(src)
                  and src.count("$") == 1)
    if text.count("$") != allowed:
        return None
    return main


def check_dockerfile(path: Path, protocol: str, base_image: str, P: list[str]) -> None:
    """A copy-mode task's Dockerfile: FROM the declared base image, COPY of the allowed inputs to /app only."""
    if not path.is_file():
        return
    allowed = {"match.mp4": S.MEDIA_TARGET, "answer.json": S.ANSWER_PATH}
    if protocol == "B":
        allowed["instruction.md"] = S.INSTRUCTION_TARGET
    seen = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        op = words[0].upper()
        if op in ("COPY", "ADD"):
            args = [w for w in words[1:] if not w.startswith("--")]
            if op == "ADD" or len(args) != 2 or allowed.get(args[0]) != args[1]:
                P.append(f"environment/Dockerfile:{n}: {line.strip()!r} is not one of the allowed inputs "
                         f"{sorted(allowed)} copied to /app")
            else:
                seen.add(args[0])
        elif op == "FROM":
            if words[1:] != [base_image]:
                P.append(f"environment/Dockerfile:{n}: {line.strip()!r} is not FROM the declared base image "
                         f"{base_image}")
        elif op not in ("WORKDIR", "ENTRYPOINT"):
            P.append(f"environment/Dockerfile:{n}: unexpected instruction {op}")
    for name in sorted(set(allowed) - seen):
        P.append(f"environment/Dockerfile does not copy {name} to {allowed[name]}")


def check_compose(path: Path, protocol: str, net: str, media: str, game: str, case_id: str,
                  P: list[str], notes: list[str]) -> None:
    """A task's compose file: only services.main with the generator's keys, its network mode, and
    read-only binds of exactly the inputs the form mounts (the video from the media root)."""
    try:
        doc = load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        P.append(f"environment/docker-compose.yaml is not YAML: {exc}")
        return
    services = (doc or {}).get("services") or {}
    if set(services) != {"main"} or set(doc) != {"services"}:
        P.append(f"docker-compose.yaml must define only services.main, found {sorted(doc)} / {sorted(services)}")
    main = services.get("main") or {}
    extra = set(main) - {"entrypoint", "network_mode", "volumes", "command"}
    if extra:
        P.append(f"services.main has unexpected keys {sorted(extra)}")
    want_cmd = ["/bin/sh", "-c", S.SEED_COMMAND] if media == "mount" else None
    if main.get("command") != want_cmd:
        P.append(f"services.main.command is {main.get('command')!r}, expected {want_cmd!r}")
    if main.get("entrypoint") != []:
        P.append("services.main must set `entrypoint: []` (an image ENTRYPOINT would stop the trial)")
    want_none = S.NET_MODES[net].compose_none
    if want_none and main.get("network_mode") != "none":
        P.append(f"--net {net} needs `network_mode: none` on services.main")
    if not want_none and "network_mode" in main:
        P.append(f"--net {net} must not set network_mode on main (it would bypass Harbor's egress control)")
    expected = {}
    if media == "mount":
        expected[S.MEDIA_TARGET] = media_rel(game, case_id)
        if protocol == "B":
            expected[S.INSTRUCTION_TARGET] = "./instruction.md"
        expected[S.SEED_SOURCE_TARGET] = "./answer.json"
    seen = {}
    for i, v in enumerate(main.get("volumes") or []):
        if not isinstance(v, dict) or v.get("type") != "bind":
            P.append(f"services.main.volumes[{i}] is not a long-syntax bind mount: {v!r}")
            continue
        src, tgt = str(v.get("source", "")), str(v.get("target", ""))
        if v.get("read_only") is not True:
            P.append(f"services.main.volumes[{i}] ({tgt}) is not read-only")
        if tgt not in expected:
            P.append(f"services.main.volumes[{i}] mounts {src} at {tgt}: only {sorted(expected)} may be mounted")
            continue
        seen[tgt] = src
        if tgt == S.MEDIA_TARGET:
            m = MEDIA_SOURCE_RE.fullmatch(src)
            ok = (m.group(1) == expected[tgt]) if m else (src.startswith("/") and src.endswith("/" + expected[tgt]))
            if not ok:
                P.append(f"the video mount source {src!r} is not ${{{S.MEDIA_ENV}:?...}}/{expected[tgt]} "
                         f"or an absolute --host-media path ending in it")
            if not m:
                notes.append(f"video pinned to {src} (--host-media)")
        elif src != expected[tgt]:
            P.append(f"the mount of {tgt} comes from {src!r}, expected {expected[tgt]!r}")
    for tgt in sorted(set(expected) - set(seen)):
        P.append(f"docker-compose.yaml does not mount {expected[tgt]} at {tgt}")
    for tgt, src in seen.items():
        low = src.lower()
        if any(s in low for s in ("/gt/", "tests/", "solution/", "judge")):
            P.append(f"the mount of {tgt} comes from {src!r}, a verifier/oracle-only path")


def read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
