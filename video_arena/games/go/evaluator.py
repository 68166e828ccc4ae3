"""KataGo as the Go V_t evaluator: Black's win rate of every position of a game.

The engine (KataGo v1.18.1 OpenCL AppImage + the b10c384 network, both from the PyPI katrain 1.20.0
wheel) is installed into the gitignored <repo>/.cache/katago/ by scripts/install-katago.sh, which this
module runs when the engine is missing.  It runs KataGo's analysis engine (JSON queries on stdin) with
one analysis thread, one search thread and maxVisits=1: the raw network value, which is deterministic
(engines.md: with more visits values drift by +-0.01 between runs).  V = rootInfo.winrate, reported for
Black (reportAnalysisWinratesAs = BLACK).

Values are written per game to <repo>/.cache/go-vt/<game id>-<key>.json after every position, so an
interrupted evaluation resumes where it stopped.
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

from video_arena import paths
from video_arena.digests import sha256_text

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "katago" / "analysis.cfg"
INSTALL_SCRIPT = paths.REPO_ROOT / "scripts" / "install-katago.sh"
KATAGO_DIR_ENV = "VIDEO_ARENA_KATAGO_DIR"
VT_CACHE_ENV = "VIDEO_ARENA_GO_VT_CACHE"

KATRAIN_VERSION = "1.20.0"
KATAGO_VERSION = "1.18.1"
MODEL_NAME = "b10c384h6nbttflrs.bin.gz"
MAX_VISITS = 1
RULES = "japanese"
WHITE_PLAYER = "W"   # who moves first after handicap stones

EVALUATOR = {
    "engine": f"KataGo v{KATAGO_VERSION} (OpenCL AppImage, CPU via pocl)",
    "engine_source": f"PyPI katrain=={KATRAIN_VERSION} (MIT): katrain/KataGo/katago",
    "model": MODEL_NAME,
    "model_source": f"PyPI katrain=={KATRAIN_VERSION}: katrain/models/{MODEL_NAME}",
    "mode": "analysis engine, rootInfo.winrate reported for Black",
    "max_visits": MAX_VISITS,
    "threads": 1,
    "rules": RULES,
    "komi": "the record's KM",
}


class KataGoError(RuntimeError):
    pass


def katago_dir() -> Path:
    return Path(os.environ.get(KATAGO_DIR_ENV) or paths.REPO_ROOT / ".cache" / "katago")


def vt_cache_dir() -> Path:
    return Path(os.environ.get(VT_CACHE_ENV) or paths.REPO_ROOT / ".cache" / "go-vt")


def ensure_installed() -> tuple[Path, Path, Path]:
    """(launcher, model, homeDataDir); runs scripts/install-katago.sh when anything is missing."""
    root = katago_dir()
    launcher = root / "squashfs-root" / "AppRun"
    model = root / "katrain" / "models" / MODEL_NAME
    home = root / "home"
    tuned = list((home / "opencltuning").glob("tune13_*_x19_y19_c384_m192_h32_mv15.txt"))
    if not (launcher.is_file() and model.is_file() and tuned):
        env = dict(os.environ, **{KATAGO_DIR_ENV: str(root)})
        proc = subprocess.run(["bash", str(INSTALL_SCRIPT)], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise KataGoError(f"scripts/install-katago.sh failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return launcher, model, home


class KataGo:
    """One long-lived `katago analysis` process."""

    def __init__(self):
        launcher, model, home = ensure_installed()
        self.cmd = [str(launcher), "analysis", "-config", str(CONFIG), "-model", str(model),
                    "-override-config", f"homeDataDir={home}"]
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self._stderr: deque[str] = deque(maxlen=60)
        threading.Thread(target=self._drain, daemon=True).start()
        atexit.register(self.close)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line.rstrip())

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def query(self, query: dict[str, Any], n_replies: int):
        """Send one query; yield its replies (dicts) as they arrive."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(query) + "\n")
        self.proc.stdin.flush()
        got = 0
        while got < n_replies:
            line = self.proc.stdout.readline()
            if not line:
                raise KataGoError(f"KataGo exited ({self.proc.poll()}); its log ends:\n{self.stderr_tail()}")
            reply = json.loads(line)
            if "error" in reply:
                raise KataGoError(f"KataGo rejected query {query.get('id')!r}: {reply['error']}")
            if reply.get("id") != query["id"] or "rootInfo" not in reply:
                continue  # warnings, or a reply to something else
            got += 1
            yield reply

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


_ENGINE: KataGo | None = None


def engine() -> KataGo:
    global _ENGINE
    if _ENGINE is None or _ENGINE.proc.poll() is not None:
        _ENGINE = KataGo()
    return _ENGINE


def cache_path(game_id: str, gtp_moves: list[list[str]], komi: float,
               initial_stones: list[list[str]] | None = None) -> Path:
    doc: dict[str, Any] = {"evaluator": EVALUATOR, "moves": gtp_moves, "komi": komi}
    if initial_stones:   # only when there are any: a game without keeps its cache file name
        doc["initial_stones"] = initial_stones
    key = json.dumps(doc, sort_keys=True)
    digest = sha256_text(key)[:16]
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in game_id)
    return vt_cache_dir() / f"{safe}-{digest}.json"


def _load_cache(path: Path) -> dict[int, float]:
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {int(k): float(v) for k, v in doc["values"].items()}
    except (ValueError, KeyError, TypeError):
        return {}


def _save_cache(path: Path, game_id: str, values: dict[int, float], seconds: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    doc = {"game": game_id, "evaluator": EVALUATOR, "engine_seconds": round(seconds, 1),
           "values": {str(k): values[k] for k in sorted(values)}}
    tmp.write_text(json.dumps(doc, indent=0) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def black_winrates(game_id: str, gtp_moves: list[list[str]], komi: float,
                   progress: Callable[[int, int], None] | None = None,
                   initial_stones: list[list[str]] | None = None) -> list[float]:
    """Black's win rate before the first move and after every move (len(moves) + 1 values); the
    position starts with `initial_stones` ([colour, vertex], e.g. handicap stones) on the board."""
    n = len(gtp_moves) + 1
    path = cache_path(game_id, gtp_moves, komi, initial_stones)
    values = _load_cache(path)
    seconds = 0.0
    if path.is_file():
        try:
            seconds = float(json.loads(path.read_text(encoding="utf-8")).get("engine_seconds", 0.0))
        except ValueError:
            pass
    missing = [t for t in range(n) if t not in values]
    if progress:
        progress(n - len(missing), n)
    if missing:
        query = {"id": f"va-{game_id}", "moves": gtp_moves, "rules": RULES, "komi": komi,
                 "boardXSize": 19, "boardYSize": 19, "analyzeTurns": missing, "maxVisits": MAX_VISITS}
        if initial_stones:
            query |= {"initialStones": initial_stones,
                      "initialPlayer": gtp_moves[0][0] if gtp_moves else WHITE_PLAYER}
        t0 = last_save = time.monotonic()
        for reply in engine().query(query, len(missing)):
            values[int(reply["turnNumber"])] = float(reply["rootInfo"]["winrate"])
            now = time.monotonic()
            if now - last_save > 5 or len(values) == n:
                _save_cache(path, game_id, values, seconds + now - t0)
                last_save = now
            if progress:
                progress(len(values), n)
        _save_cache(path, game_id, values, seconds + time.monotonic() - t0)
    out = [values[t] for t in range(n)]
    for t, v in enumerate(out):
        if not (0.0 <= v <= 1.0):
            raise KataGoError(f"{game_id}: win rate {v!r} at turn {t} is outside [0, 1]")
    return out
