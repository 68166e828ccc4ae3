"""What every record format's end-to-end import test checks on the tree it imported into (docs/IMPORTING.md,
"A match file a game reads"): the case scores 1.0 with the oracle, generates and validates as a Harbor task
of both protocols, and re-renders bit-exact with `build-cases --media-only`.  Shared by the tests of each
format (tests/e2e/test_*_import.py) so that each runs the same checks once per format."""
from __future__ import annotations

import json
from pathlib import Path

from video_arena.cases import build as B
from video_arena.harbor import generate, validate
from video_arena.importing import cli as import_cli

PERFECT = {"reward": 1.0, "t1_f1": 1.0, "t2_macro_acc": 1.0, "t3_macro_acc": 1.0}


def import_record(tree: Path, game: str, fmt: str, files: list[Path], licence: str) -> int:
    return import_cli.main(["--tasks-root", str(tree), "--game", game, f"--{fmt}", *map(str, files),
                            "--licence", licence])


def ground_truths(tree: Path, game: str) -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((tree / game / "gt").glob("*.json"))]


def assert_oracle_scores_one(J, tree: Path, game: str) -> None:
    for gt in ground_truths(tree, game):
        assert J.reward_of(J.judge(gt, J.oracle_answer(gt))) == PERFECT, gt["case_id"]


def assert_generates_and_validates(tree: Path, game: str, out: Path, protocol: str) -> None:
    assert generate.main(["--out", str(out), "--protocol", protocol, "--net", "docker", "--tasks-root", str(tree),
                          "--games", game, "--no-progress"]) == 0
    assert validate.main([str(out), "--tasks-root", str(tree), "--no-progress"]) == 0
    assert len(list(out.glob(f"{game}-*"))) == len(ground_truths(tree, game))


def assert_rerenders_bit_exact(tree: Path, game: str, media_root: Path) -> None:
    done, failed = B.render_media_all([game], tree, media_root, jobs=1, log=lambda s: None)
    assert not failed and len(done[game]) == len(ground_truths(tree, game))
    assert all(s["media_matches_manifest"] for s in done[game])


def assert_refused(capsys, tree: Path, game: str, fmt: str, file: Path, words: str) -> None:
    """`import-cases --FORMAT FILE` refuses the file: exit 2, one line on stderr naming the file and saying
    `words`, nothing written under the tree."""
    rc = import_record(tree, game, fmt, [file], "any")
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and file.name in err and words in err, err
    assert not tree.exists() or not any(p.is_file() for p in tree.rglob("*"))
