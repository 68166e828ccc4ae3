"""A user's StarCraft II replay as a case's record (`video-arena import-cases --game sc2 --sc2replay FILE`).

A file is one `.SC2Replay` (an MPQ archive, what the game saves), one against one, of release 2.0.4 or later
(the releases whose tracker events give the unit positions and player stats the events, V_t and video are made
from).  It is read by the same code as the committed replays (replay.to_record, replay.usable), but a crafted
archive can make sc2reader allocate or loop without bound, so:

- the file is read bounded (a regular file reached through no link, at most MAX_REPLAY_BYTES) and must start
  with an MPQ header;
- sc2reader parses it in a child process with limits on its CPU time, wall time, memory and output
  (safe_io.run_limited), and every exception it raises becomes one line;
- the record the child sends back is checked again here (replay.record_problem: the layout, every number
  in range, the caps on units, buildings, positions and stats).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from video_arena.digests import sha256_bytes
from video_arena.games.sc2 import match as M
from video_arena.games.sc2.replay import ReplayError, record_problem
from video_arena.safe_io import LimitExceeded, read_capped, run_limited

FORMAT = "sc2replay"
COLLECTION = "imported"
#: Largest replay read (an hour-long one-against-one replay is about 1 MB).
MAX_REPLAY_BYTES = 8 * 1024 * 1024
#: The child that runs sc2reader: CPU seconds, wall seconds, memory, output (the committed replays take at
#: most about 2 s of CPU and 60 MB).
PARSE_CPU_S = 60
PARSE_WALL_S = 120.0
PARSE_MEMORY_BYTES = 1024 * 1024 * 1024
PARSE_OUTPUT_BYTES = 64 * 1024 * 1024
#: The MPQ archive's header (a replay starts with the user-data header, `MPQ\x1b`).
MPQ_MAGIC = (b"MPQ\x1b", b"MPQ\x1a")


def record_from_files(paths: list[Path]) -> dict[str, Any]:
    """The record (as replay.to_record makes it) of one replay file, its source naming the file and its
    match key; ReplayError or FileRefused (a ValueError, one line naming the file) when it cannot be one."""
    if len(paths) != 1:
        raise ReplayError(f"--{FORMAT} takes one replay file per match, got {len(paths)}")
    path = Path(paths[0])
    data = read_capped(path, MAX_REPLAY_BYTES, "a replay")
    if not data.startswith(MPQ_MAGIC):
        raise ReplayError(f"{path}: not a StarCraft II replay (it does not start with an MPQ archive header)")
    try:
        out = run_limited("video_arena.games.sc2.replay", "import_record", data, wall_s=PARSE_WALL_S,
                          cpu_s=PARSE_CPU_S, memory_bytes=PARSE_MEMORY_BYTES, output_bytes=PARSE_OUTPUT_BYTES)
    except LimitExceeded as exc:
        raise ReplayError(f"{path}: reading it {exc}") from None
    try:
        doc = json.loads(out)
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict) or not ("record" in doc or "refused" in doc):
        raise ReplayError(f"{path}: the replay reader gave no record")
    if "refused" in doc:
        raise ReplayError(f"{path}: {str(doc['refused'])[:300]}")
    record = doc["record"]
    why = record_problem(record)
    if why:
        raise ReplayError(f"{path}: {why}")
    key = M.match_key(record)
    record["source"] = {"collection": COLLECTION, "id": f"sc2replay-{key.rsplit('-', 1)[-1][:16]}",
                        "format": FORMAT, "match_key": key,
                        "record_files": [{"name": path.name, "sha256": sha256_bytes(data)}]}
    return {"source": record.pop("source"), **record}
