#!/usr/bin/env python3
"""A perception agent: reads match.mp4's pixels, nothing else, with the game's own pixel reader.

    python3 perception_agent.py --sandbox DIR          (DIR holds match.mp4, instruction.md, answer.json)

Protocol B agent (video-arena run-b --agent-cmd 'python3 .../perception_agent.py --sandbox {sandbox}').
A thin dispatcher: it picks the game from instruction.md's title and runs that game's reader. Standalone
on purpose: Python 3.11 stdlib + what the readers use (numpy, Pillow, ffmpeg/ffprobe: the sandbox image's
toolset); it imports nothing from the toolkit and opens no file but the sandbox's three, its own folder's
and what a reader opens (a system font for glyph templates).

Its folder (flat; `video-arena baselines --install-agents DIR` writes it, video_arena/games/readers.py
says how) holds this file, pixel_reader.py (the helpers every reader shares), one `<game>_reader.py` per
game (video_arena/games/<game>/reader.py) and readers.json, {instruction title in lower case: reader
module}. A reader writes the answer rows as it finds the events (answer.json is rewritten atomically every
few events and at the end) and returns the visible state it recovered after each, which this agent only
counts.
"""
from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
INDEX = "readers.json"


def readers() -> dict[str, str]:
    """{title lower case: reader module} from the folder's index."""
    try:
        table = json.loads((HERE / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"perception agent: {HERE / INDEX}: cannot read the readers' index ({exc})")
    if not isinstance(table, dict) or not all(isinstance(v, str) and v.isidentifier() for v in table.values()):
        raise SystemExit(f"perception agent: {HERE / INDEX}: not a table title -> reader module")
    return table


def title_of(instruction: str) -> str:
    m = re.search(r"^#\s*Video-Arena:\s*(.+)$", instruction, re.M)
    return (m.group(1) if m else "").strip().lower()


def reader_for(title: str):
    table = readers()
    if title not in table:
        raise SystemExit(f"perception agent: no reader for {title!r} (instruction.md's title); readers: "
                         f"{', '.join(sorted(table))}")
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return importlib.import_module(table[title])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sandbox", default=".", help="the sandbox folder (default: the working directory)")
    ap.add_argument("--game", help="the game's title, overriding instruction.md's (lower case)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    sandbox = Path(args.sandbox)
    video, answer = sandbox / "match.mp4", sandbox / "answer.json"
    title = args.game or title_of((sandbox / "instruction.md").read_text(encoding="utf-8"))
    reader = reader_for(title)
    log = (lambda msg: None) if args.quiet else (lambda msg: print(f"[{title}] {msg}", file=sys.stderr))
    import pixel_reader  # deferred: the readers' folder is on sys.path only now

    writer = pixel_reader.Writer(answer)
    try:
        seen = reader.read(video, writer, log)
    finally:
        writer.flush()
    print(f"perception agent: {title}: {len(writer.rows)} events written to {answer} "
          f"({len(seen)} visible states read)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
