"""The `video-arena` command: a thin dispatcher to each concern's own `main(argv)`.

Each sub-command lives with the code it drives; this table only names them, so importing the CLI
costs nothing and one broken concern cannot stop the others from running.
"""
from __future__ import annotations

import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "score": ("video_arena.scoring.cli:main", "score a results folder or a Harbor job (per-game means, n, intervals, compare)"),
    "explore": ("video_arena.explore.site:main", "write a static results explorer (scores, cases, timelines, stills) for a browser"),
    "timeline": ("video_arena.scoring.timeline:main", "draw one case: GT vs predicted events and V_t"),
    "judge": ("video_arena.scoring.cli:judge_main", "judge one answer against one ground truth"),
    "build-cases": ("video_arena.importing.private_set:main", "build the built-in cases and media from real records, or a private set from a folder of records (--records)"),
    "import-cases": ("video_arena.importing.cli:main", "import matches from outside (footage + event log + V_t) as cases"),
    "games": ("video_arena.games.cli:main", "list games, sync definitions, write docs/GAMES.md"),
    "make-harbor": ("video_arena.harbor.generate:main", "generate a Harbor dataset (Protocol A or B)"),
    "validate": ("video_arena.harbor.validate:main", "validate a generated Harbor dataset offline"),
    "publish": ("video_arena.harbor.publish:main", "publish a copy-mode dataset as a git repository + Harbor registry.json"),
    "harbor-envs": ("video_arena.harbor.envtable:main", "the table of Harbor environments and the task forms each accepts (docs/HARBOR.md)"),
    "image": ("video_arena.container_host.image_cli:main", "build the sandbox image (image build), push it to a registry (image push)"),
    "docker": ("video_arena.container_host.docker_host:main", "start/check the local Docker daemon and compose plugin"),
    "oracle-check": ("video_arena.harbor.oracle_check:main", "build image, generate both datasets, run oracle and nop"),
    "run-a": ("video_arena.protocol_a.runner:main", "Protocol A: one request per case against an OpenAI-compatible endpoint"),
    "run-b": ("video_arena.protocol_b.runner:main", "Protocol B: an agent CLI in a fresh sandbox per case"),
    "baselines": ("video_arena.baselines.run:main", "oracle, nop, chance, majority, grid ceiling, visible ceiling, perception agent -> docs/RESULTS.md"),
    "parity": ("video_arena.baselines.parity_runs:main", "the reference agents natively and on Harbor, side by side -> docs/HARBOR.md"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: video-arena COMMAND [options]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "video-arena COMMAND --help for a command's options"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"video-arena: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module_name, func_name = COMMANDS[name][0].split(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
    except KeyboardInterrupt:   # Ctrl-C before the command started (nothing done yet): one line, no traceback
        print(f"video-arena {name}: interrupted while loading; nothing was done", file=sys.stderr)
        return 130
    return int(func(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
