"""What a Video-Arena Harbor task is: the numbers, modes and expected texts that the generator
writes and the validator checks (docs/HARBOR.md, "What a trial is", "Network modes", "A task folder").

Both sides import this module, so a budget or a mode is stated once.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from video_arena import paths
from video_arena.core.instruction import instruction_for
from video_arena.core.prompts import turn1_prompt

#: The Harbor organisation part of every task name: `video-arena/<game>-<case_id>`.
TASK_ORG = "video-arena"
DATASET_VERSION = "1.0.0"
DEFAULT_BASE_IMAGE = "video-arena/base:latest"
#: The marker file at the top of a generated dataset (also what --force is allowed to replace).
DATASET_MARKER = "video-arena-dataset.json"
DATASET_FORMAT = "video-arena-harbor-dataset/1"
CASE_FORMAT = "video-arena-harbor-case/1"

WORKDIR = "/app"
ANSWER_PATH = "/app/answer.json"
MEDIA_TARGET = "/app/match.mp4"
INSTRUCTION_TARGET = "/app/instruction.md"
#: Mount mode: where the task-local answer seed is mounted read-only, and the container command that
#: copies it to /app/answer.json (as the image's user, `agent`) before Harbor's keep-alive sleep.
SEED_SOURCE_TARGET = "/opt/video-arena/answer.json"
SEED_COMMAND = (f"[ -e {ANSWER_PATH} ] || {{ cp {SEED_SOURCE_TARGET} {ANSWER_PATH} && "
                f"chown agent:agent {ANSWER_PATH} 2>/dev/null; }}; exec sleep infinity")

#: Protocol B's budget: 200 tool-call turns (the agent's own flag) and 120 minutes of wall clock.
B_MAX_TURNS = 200
B_TIMEOUT_MIN = 120
AGENT_TIMEOUT_SEC = {"A": 3600.0, "B": float(B_TIMEOUT_MIN * 60)}
VERIFIER_TIMEOUT_SEC = 600.0
CPUS = 4
MEMORY_MB = 8192

#: The environment variable the compose files interpolate in mount mode (without --host-media).
MEDIA_ENV = "VA_MEDIA_ROOT"
MEDIA_ENV_MESSAGE = (f"{MEDIA_ENV} is unset: export it as the tasks tree that holds "
                     "<game>/media/<case_id>.mp4")


@dataclass(frozen=True)
class NetMode:
    """One row of the "Network modes" table of docs/HARBOR.md."""

    name: str
    environment: str          # [environment].network_mode
    agent: str | None         # [agent].network_mode (None: unset)
    compose_none: bool        # `network_mode: none` on the compose service main
    use: str


#: The network modes by name (`make-harbor --net`).  "compose-none" was called "docker" (a runtime's
#: name): make-harbor refuses the old name in one line naming the new one (OLD_NET_NAMES).
NET_MODES: dict[str, NetMode] = {
    "strict": NetMode("strict", "no-network", "no-network", True,
                      "agents whose model calls leave from the host (terminus-2, oracle); needs Harbor egress control"),
    "compose-none": NetMode("compose-none", "public", None, True,
                            "the same on Docker or Podman hosts without Harbor egress control: the compose file's "
                            "`network_mode: none` is the only isolation layer"),
    "phase": NetMode("phase", "public", "no-network", False,
                     "installed agents that call their model from inside (claude-code, codex, ...); needs egress control"),
}
OLD_NET_NAMES = {"docker": "compose-none"}
MEDIA_MODES = ("mount", "copy")
PROTOCOLS = ("A", "B")


def task_dir_name(game: str, case_id: str) -> str:
    return f"{game}-{case_id}"


def task_name(game: str, case_id: str) -> str:
    return f"{TASK_ORG}/{task_dir_name(game, case_id)}"


def b_prompt() -> str:
    """The Protocol B task's top-level instruction.md: the turn-1 prompt pointing at /app."""
    return turn1_prompt(WORKDIR, B_MAX_TURNS, B_TIMEOUT_MIN)


def delivered_texts(protocol: str, instruction_path: str | Path) -> dict[str, str]:
    """The texts a task delivers, by task-relative path.

    A: instruction.md is the A-rendered game instruction.
    B: instruction.md is the turn-1 prompt; environment/instruction.md is the B-rendered game instruction
    (mounted or copied to /app/instruction.md).
    """
    if protocol == "A":
        return {"instruction.md": instruction_for("video", instruction_path)}
    if protocol == "B":
        return {"instruction.md": b_prompt(),
                "environment/instruction.md": instruction_for("agentic", instruction_path)}
    raise ValueError(f"unknown protocol {protocol!r}: use A or B")


def compose_needed(media: str, net: str) -> bool:
    """Mount mode always needs the compose file (its bind mounts). Copy mode needs one only for
    --net compose-none, where `network_mode: none` is the only isolation; strict and phase copy-mode tasks
    are Dockerfile-only, which is what Harbor's cloud environments accept."""
    return media == "mount" or net == "compose-none"


def cpu_override_args() -> list[str]:
    """Harbor's CPU override for this host: Docker refuses a CPU limit above the host's count ("Range of CPUs
    is from 0.01 to 2.00"), so on a host with fewer CPUs than a task asks for (CPUS) a trial runs with
    --override-cpus (oracle and nop do not depend on it; for model runs it is a different budget, see
    docs/HARBOR.md).  Every command the toolkit runs or prints for this host carries it."""
    n = os.cpu_count() or 1
    return ["--override-cpus", str(n)] if n < CPUS else []


#: The dataset metric's file name in a published dataset (Harbor's `uv-script` metric runs it).
METRIC_FILE = "metric.py"


def metric_script() -> Path:
    """The dataset metric script (harbor_templates/metric.py): stdlib, run by `uv run` inside Harbor."""
    return paths.repo_resource("harbor_templates") / METRIC_FILE
