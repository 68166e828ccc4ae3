#!/usr/bin/env python3
"""Does one video encode to the same bytes whatever the process encoded before?

A rebuild must give byte-identical media (docs/CASES.md, "Determinism"), but a build encodes many
videos in one process, and x264 can read memory an earlier encoder left behind. This encodes one small
board-like video (7 positions, 133 frames at 5 fps) `--rounds` times in one process, each time after a
video of random noise at a random size, and counts the distinct SHA-256s of the board video, for each
setting (`shipped` is video_arena.media.encode.X264_PARAMS; any other is an x264-params string on top
of the preset) and picture size:

    python benchmarks/encode_determinism.py [--rounds 1000] [--sizes 64x48,200x150] [--preset P] shipped me=dia:subme=1:aq-mode=0

(`--preset`, default the shipped one, is the x264 preset every setting runs on.)

One distinct digest is the only good answer. tests/unit/test_encode.py runs the shipped settings.
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from video_arena.media import encode as E  # noqa: E402
from video_arena.digests import sha256_file  # noqa: E402


def board_positions(width: int, height: int, n: int = 7) -> list[Image.Image]:
    """n positions of a dark board gaining one coloured bar per position."""
    out = []
    for j in range(n):
        img = Image.new("RGB", (width, height), (20, 20, 20))
        draw = ImageDraw.Draw(img)
        for q in range(j):
            draw.rectangle([4 + 6 * q, 8, 8 + 6 * q, height - 8], fill=(240, 200 - 20 * (q % 5), 60))
        out.append(img)
    return out


def interleaved_digests(rounds: int, x264_extra: str = E.X264_PARAMS, size: tuple[int, int] = (64, 48),
                        seed: int = 0, progress=None) -> Counter:
    """SHA-256 (first 16 hex digits) of the same board video encoded `rounds` times, each after a noise
    video of a random size, in this process: how often each digest came out."""
    positions = board_positions(*size)
    schedule = sorted(random.Random(7).randrange(len(positions)) for _ in range(133))
    rng = np.random.default_rng(seed)
    digests: Counter = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        noise_mp4, board_mp4 = Path(tmp) / "noise.mp4", Path(tmp) / "board.mp4"
        for k in range(rounds):
            w, h = int(rng.integers(8, 40)) * 2, int(rng.integers(8, 30)) * 2
            noise = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for _ in range(5)]
            E.encode_mp4(noise, [0, 1, 2, 3, 4, 4, 4], 5, noise_mp4, x264_extra=x264_extra)
            E.encode_mp4(positions, schedule, 5, board_mp4, x264_extra=x264_extra)
            digests[sha256_file(board_mp4)[:16]] += 1
            if progress:
                progress(k + 1)
    return digests


PRESET = E.PRESET


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("settings", nargs="*", default=["shipped"],
                    help="'shipped' or an x264-params string (default: shipped)")
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--preset", default=E.PRESET, help=f"the x264 preset of every setting (default: shipped, {E.PRESET})")
    ap.add_argument("--sizes", default="64x48", help="comma-separated WxH, even numbers (default 64x48)")
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    try:
        sizes = [tuple(int(v) for v in s.lower().split("x")) for s in a.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes: {a.sizes!r} is not WxH[,WxH...]")
    if any(len(s) != 2 or min(s) < 16 or s[0] % 2 or s[1] % 2 for s in sizes):
        ap.error(f"--sizes: {a.sizes!r}: each WxH must be two even numbers of at least 16")
    from tqdm import tqdm

    E.PRESET = a.preset
    worst = 1
    for setting in a.settings:
        extra = E.X264_PARAMS if setting == "shipped" else setting
        label = f"{a.preset} " + (f"shipped ({extra})" if setting == "shipped" and a.preset == PRESET else extra)
        for size in sizes:
            with tqdm(total=a.rounds, desc=f"{size[0]}x{size[1]} {label}", leave=False, file=sys.stderr) as bar:
                digests = interleaved_digests(a.rounds, extra, size, progress=lambda k: bar.update(1))
            top = digests.most_common(1)[0][1]
            print(f"{size[0]}x{size[1]} {label}: {a.rounds} rounds, {len(digests)} distinct digest"
                  f"{'s' if len(digests) > 1 else ''}" + (f" (the most common in {top})" if len(digests) > 1 else ""),
                  flush=True)
            worst = max(worst, len(digests))
    return 0 if worst == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
