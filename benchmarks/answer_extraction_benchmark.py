"""Benchmark of Protocol A answer extraction (video_arena.core.answers) on hostile replies.

A reply is model output: deeply nested braces, thousands of unterminated strings or a truncated
answer must not stall a run.  For each hostile pattern this prints the extraction time at 1, 2 and
4 MB (CPU seconds) and the ratio of the 4 MB time to the 1 MB time (about 4 when the work is linear in the
reply), then the same pattern through the former scan (decode at every `{`, one character on after
a failure) at 25, 50 and 100 kB (about 4 per doubling: quadratic), and finally a genuine 20,000-row
answer after 3 MB of prose.

    python benchmarks/answer_extraction_benchmark.py [--max-mb 4] [--skip-former] [--patterns a,b]
"""
from __future__ import annotations

import argparse
import json
import time

from video_arena.core.answers import answer_candidates

ROW = {"t": 1.5, "type": "move", "actor": "white", "where": "e4", "delta": "flat", "state": "even"}
PATTERNS = {
    "nested objects": '{"a":',
    "nested lists": '{"a":[',
    "nested answers": '{"events":[',
    "bare braces": "{",
    "keys without colons": '{"{"',
    "unterminated strings": '{"a": "',
}


def former_scan(text: str) -> list[dict]:
    dec = json.JSONDecoder()
    i, out = 0, []
    while True:
        i = text.find("{", i)
        if i < 0:
            return out
        try:
            obj, end = dec.raw_decode(text, i)
        except (ValueError, RecursionError):
            i += 1
            continue
        if isinstance(obj, dict):
            out.append(obj)
        i = end


def timed(fn, text: str) -> float:
    """CPU seconds of this process (steadier than wall time on a shared machine)."""
    t = time.process_time()
    fn(text)
    return time.process_time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-mb", type=int, default=4)
    ap.add_argument("--skip-former", action="store_true", help="do not time the former (quadratic) scan")
    ap.add_argument("--patterns", default=None, help=f"comma-separated subset of: {', '.join(PATTERNS)}")
    a = ap.parse_args()
    mb = 1_000_000
    sizes = [s for s in (1, 2, 4, 8) if s <= a.max_mb]
    chosen = {k: v for k, v in PATTERNS.items() if not a.patterns or k in a.patterns.split(",")}
    print("CPU seconds of answer_candidates()")
    print(f"{'pattern':22s} " + " ".join(f"{s:>5d} MB" for s in sizes) + "   ratio(max/1MB)")
    for name, unit in chosen.items():
        ts = [timed(answer_candidates, unit * (s * mb // len(unit))) for s in sizes]
        print(f"{name:22s} " + " ".join(f"{t:7.3f}s" for t in ts) + f"   {ts[-1] / ts[0]:6.1f}")
    if not a.skip_former:
        print("\nformer scan (decode at every '{'):")
        print(f"{'pattern':22s}    25 kB    50 kB   100 kB   ratio(100/25 kB)")
        for name, unit in chosen.items():
            ts = [timed(former_scan, unit * (n // len(unit))) for n in (25_000, 50_000, 100_000)]
            print(f"{name:22s} " + " ".join(f"{t:7.3f}s" for t in ts) + f"   {ts[-1] / ts[0]:6.1f}")
    reply = "x" * 3 * mb + json.dumps({"events": [ROW] * 20000})
    print(f"\n20,000-row answer after 3 MB of prose ({len(reply) / mb:.1f} MB): "
          f"{timed(answer_candidates, reply):.3f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
