"""The games' pixel readers as the toolkit sees them: which games have one, the reader modules, and the
flat folder an agent runs them from.

A game's reader is `video_arena/games/<game>/reader.py` (standalone: see video_arena/games/pixel_reader.py
for its interface). Inside a sandbox the perception agent (video_arena/baselines/perception_agent.py)
runs them from one flat folder:

    perception_agent.py     the dispatcher
    pixel_reader.py         the shared helpers
    <game>_reader.py        one per game with a reader
    readers.json            {"<the game's title, lower case>": "<game>_reader", ...}: the dispatcher
                            picks the reader by the title instruction.md states

`agent_files` lists that folder's files (name, bytes); every installer (the baselines runner, the Harbor
agent, the docs' command `video-arena baselines --install-agents DIR`) writes exactly these.
"""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

from video_arena.games import base
from video_arena.games import pixel_reader

PIXEL_READER = Path(pixel_reader.__file__).resolve()
#: the dispatcher's index of the flat folder: instruction title (lower case) -> reader module
INDEX = "readers.json"


def reader_path(game: str) -> Path:
    return base.GAMES_DIR / game / "reader.py"


def reader_games() -> list[str]:
    """The games (in name order) that have a pixel reader."""
    return [g for g in base.game_names() if reader_path(g).is_file()]


def load_reader(game: str) -> ModuleType:
    """The game's reader module, importing `pixel_reader` as the sandbox does (a top-level module: here
    the toolkit's own copy, video_arena.games.pixel_reader)."""
    if not reader_path(game).is_file():
        raise LookupError(f"{game} has no pixel reader (video_arena/games/{game}/reader.py); readers: "
                          f"{', '.join(reader_games())}")
    sys.modules.setdefault("pixel_reader", pixel_reader)
    return importlib.import_module(f"video_arena.games.{game}.reader")


def flat_name(game: str) -> str:
    return f"{game}_reader"


def index() -> dict[str, str]:
    """{title lower case: flat module name} of every reader game."""
    return {base.load_definition(g).title.lower(): flat_name(g) for g in reader_games()}


def agent_files(dispatcher: Path) -> list[tuple[str, bytes]]:
    """(file name, bytes) of the flat folder the perception agent runs from: the dispatcher, the shared
    helpers, every game's reader and the index."""
    out = [(dispatcher.name, dispatcher.read_bytes()), (PIXEL_READER.name, PIXEL_READER.read_bytes())]
    out += [(f"{flat_name(g)}.py", reader_path(g).read_bytes()) for g in reader_games()]
    out.append((INDEX, (json.dumps(index(), indent=1, sort_keys=True) + "\n").encode()))
    return out


def source_files(game: str) -> list[Path]:
    """Every file of the game's folder that its reader or its visible V_t is made of (the folder's
    Python sources and game.toml) and the shared helpers: the inputs of a measurement of them."""
    folder = base.GAMES_DIR / game
    return [PIXEL_READER, *sorted(folder.glob("*.py")), folder / "game.toml"]
