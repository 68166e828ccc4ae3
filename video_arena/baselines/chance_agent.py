#!/usr/bin/env python3
"""Chance and majority baselines: answers that never look at the match, seeded, reproducible bit for bit.

    python3 chance_agent.py --sandbox DIR --mode chance|majority --seed 0 --rates chess=8,go=6 \
        [--where '{"chess": ["abcdefgh", "12345678"]}']

Protocol B agent (stdlib only, Python 3.11+): reads instruction.md (the game's title and vocabulary)
and match.mp4's duration (ffprobe; the pixels are never decoded), writes answer.json. The same rows are
what `answer_for_prompt` returns for a Protocol A request (the instruction text and its video_ts).

chance    round(rate * duration / 60) rows at uniform random times in [0, duration), every label drawn
          uniformly: type, actor, delta, state from the instruction's lists; `where` from the game's
          table (--where, from game.toml's `[baselines] chance_where`: every square, point or grid cell,
          single card ranks), else from the codes the instruction's `where` line lists for the row's type
          (`for `tower`, ... `top_t1`, ...`), else ""; "" for types without a location.
majority  the same rows with every `delta` `flat` and every `state` the even label.

The per-game rate is a documented prior from each game's game.toml (`[baselines] events_per_minute`),
passed on the command line (`--rates`), and so is the `where` table (`--where`), so the agent itself reads
no file but the sandbox's and knows no game but by what it is given.
The random stream depends only on (seed, game title, duration rounded to a millisecond).
"""
from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from pathlib import Path

class InstructionError(ValueError):
    pass


def parse_instruction(text: str) -> dict:
    """The game's title and label lists, as instruction.md states them."""
    title = re.search(r"^#\s*Video-Arena:\s*(.+?)\s*$", text, re.M)
    section = text.split("## Events (T1)", 1)[1] if "## Events (T1)" in text else ""
    section = section.split("\n## ", 1)[0]
    types = re.findall(r"^- `([^`]+)`:", section, re.M)
    sides = re.search(r"^Sides \(`actor`\):\s*(.+)$", text, re.M)
    state = re.search(r"^\|\s*`state`\s*\|\s*(.+?)\s*\|\s*$", text, re.M)
    delta = re.search(r"^\|\s*`delta`\s*\|\s*(.+?)\s*\|\s*$", text, re.M)
    no_where = re.search(r"For ((?:`[^`]+`(?:, )?)+) `where` is the empty string", section)
    if not (title and types and sides and state and delta):
        raise InstructionError("instruction.md does not have the expected title, event list, sides and label table")
    return {
        "game": title.group(1).strip().lower(),
        "types": types,
        "sides": re.findall(r"`([^`]+)`", sides.group(1)),
        "deltas": re.findall(r"`([^`]+)`", delta.group(1)),
        "states": re.findall(r"`([^`]+)`", state.group(1)),
        "no_where": re.findall(r"`([^`]+)`", no_where.group(1)) if no_where else [],
        "where_codes": where_codes(section, types),
    }


def where_codes(section: str, types: list[str]) -> dict[str, list[str]]:
    """{type: [code, ...]} from the `where` line's clauses that enumerate codes for named types
    ("for `tower`, the lane and tier: `top_t1`, `top_t2`, ...; for `barracks`, ..."): a clause naming
    event types and at least two other codes gives those codes to those types."""
    line = re.search(r"^`where`:(.*)$", section, re.M)
    out: dict[str, list[str]] = {}
    for clause in (re.split(r";|\.\s", line.group(1)) if line else []):
        ticks = re.findall(r"`([^`]*)`", clause)
        named = [t for t in ticks if t in types]
        codes = [t for t in ticks if t not in types and t not in ("where", '""', "")]
        if named and len(codes) >= 2:
            for t in named:
                out.setdefault(t, codes)
    return out


def where_table(parts: list) -> list[str]:
    """Every concatenation of one string of each part, in order (game.toml's `[baselines] chance_where`)."""
    out = [""]
    for part in parts:
        out = [head + str(tail) for head in out for tail in part]
    return out if parts else []


def rows(spec: dict, duration_s: float, rate_per_min: float, seed: int, mode: str,
         where_parts: list | None = None) -> list[dict]:
    if mode not in ("chance", "majority"):
        raise ValueError(f"mode must be chance or majority, not {mode!r}")
    if not (duration_s > 0 and rate_per_min >= 0):
        raise ValueError(f"need a positive duration and a rate >= 0 (got {duration_s!r}, {rate_per_min!r})")
    d = round(float(duration_s), 3)
    rng = random.Random(f"video-arena-chance/{seed}/{spec['game']}/{d:.3f}")
    n = int(round(rate_per_min * d / 60.0))
    table = where_table(where_parts or [])
    codes = spec.get("where_codes") or {}
    even = spec["states"][-1]  # "`a`, `b` or `even`": the even label is listed last
    out = []
    for t in sorted(rng.uniform(0.0, d) for _ in range(n)):
        type_ = rng.choice(spec["types"])
        actor = rng.choice(spec["sides"])
        where = rng.choice(table or codes.get(type_) or [""])
        delta = rng.choice(spec["deltas"])
        state = rng.choice(spec["states"])
        if type_ in spec["no_where"]:
            where = ""
        if mode == "majority":
            delta, state = "flat", even
        out.append({"t": round(t, 3), "type": type_, "actor": actor, "where": where, "delta": delta, "state": state})
    return out


def parse_rates(text: str) -> dict[str, float]:
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        try:
            out[name.strip().lower()] = float(value)
        except ValueError:
            raise SystemExit(f"chance agent: bad --rates entry {part!r} (want game=events_per_minute)")
    return out


def duration_of(video: Path) -> float:
    res = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(video)],
                         capture_output=True, text=True)
    try:
        return float(res.stdout.strip())
    except ValueError:
        raise SystemExit(f"chance agent: ffprobe gives no duration for {video.name}: {res.stderr.strip()[:200]}")


def parse_where(text: str) -> dict[str, list]:
    """--where: a JSON object {title: [part, ...]}, each part a string of characters or a list of strings."""
    try:
        table = json.loads(text) if text else {}
    except ValueError:
        table = None
    if not (isinstance(table, dict) and all(isinstance(v, list) and all(isinstance(p, (str, list)) for p in v)
                                            for v in table.values())):
        raise SystemExit("chance agent: --where must be a JSON object {title: [part, ...]} (parts: strings or lists)")
    return {str(k).lower(): v for k, v in table.items()}


def answer_for_prompt(prompt_text: str, video_ts: list[float], rates: dict[str, float], seed: int, mode: str,
                      where: dict[str, list] | None = None) -> dict:
    """The Protocol A answer: from the request alone (its instruction text and video_ts)."""
    spec = parse_instruction(prompt_text)
    step = (video_ts[-1] - video_ts[0]) / (len(video_ts) - 1) if len(video_ts) > 1 else 1.0
    horizon = video_ts[-1] + step
    if spec["game"] not in rates:   # never a silent zero-row answer
        raise InstructionError(f"no rate for {spec['game']!r} in the rates")
    return {"events": rows(spec, horizon, rates[spec["game"]], seed, mode, (where or {}).get(spec["game"]))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sandbox", default=".")
    ap.add_argument("--mode", choices=["chance", "majority"], default="chance")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rates", required=True,
                    help="title=events_per_minute,... (the instruction's game title, lower case; from game.toml)")
    ap.add_argument("--where", default="",
                    help='{"title": [part, ...], ...}: each game\'s `where` table (JSON; from game.toml\'s chance_where)')
    args = ap.parse_args(argv)
    sandbox = Path(args.sandbox)
    try:
        spec = parse_instruction((sandbox / "instruction.md").read_text(encoding="utf-8"))
    except (OSError, InstructionError) as exc:
        raise SystemExit(f"chance agent: {exc}")
    rates = parse_rates(args.rates)
    if spec["game"] not in rates:
        raise SystemExit(f"chance agent: no rate for {spec['game']!r} in --rates")
    where = parse_where(args.where).get(spec["game"])
    answer = {"events": rows(spec, duration_of(sandbox / "match.mp4"), rates[spec["game"]], args.seed, args.mode, where)}
    path = sandbox / "answer.json"
    tmp = path.with_name(".answer.json.tmp")
    tmp.write_text(json.dumps(answer), encoding="utf-8")
    tmp.replace(path)
    print(f"{args.mode} agent: {spec['game']}: {len(answer['events'])} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
