"""The Protocol A sampling grid (docs/PROTOCOLS.md, "The sampling grid" and "The recall ceiling").

1 FPS, capped at `max_frames` (256) spread uniformly over the whole match, longest side 768 px,
never upscaled, JPEG `-q:v 4`, one still per timestamp, in temporal order.

    n        = ceil(d)              frames at t_k = k      when ceil(d) <= max_frames (fps_eff = 1)
    n        = max_frames           frames at t_k = k*d/n  otherwise                (fps_eff = n/d)
    frame k  = the source frame on screen at t_k: the LAST frame whose pts <= t_k
    ceiling  = min(1, 2*TOL*fps_eff)

How it is fast and exact.  One demux-only pass (`ffprobe` packet timestamps and keyframe flags, no
decoding) lists the presentation time of every source frame.  Frame k's source frame j_k is then
known exactly, and ffmpeg makes the stills in whichever of two ways decodes fewer frames:

  seek  an accurate input seek to a point strictly between frame j_k-1 and frame j_k: ffmpeg seeks
        to the keyframe before it, decodes one GOP, and outputs frame j_k.  Many seeks run inside one
        ffmpeg process (one input + one output per still), `CHUNK` stills per process, `JOBS`
        processes at a time: a long match costs a GOP per still instead of a full decode.
  pass  one decode up to the last still, a `select` filter keeping exactly the source frames by
        timestamp: cheaper when the keyframes are sparser than the stills.

Both give byte-identical stills.

The commands are plain argv lists built by `frame_commands()`; the native runner executes them on
the host and the Harbor agent executes the very same commands (as one shell script, see
`shell_script()`) inside the offline container.  Nothing here depends on where they run.
"""
from __future__ import annotations

import bisect
import json
import math
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence
from concurrent.futures import ThreadPoolExecutor

from video_arena import paths
from video_arena.digests import sha256_bytes, sha256_file

#: Stills per ffmpeg process: each still is one input (with its own demuxer and decoder) and one
#: output, so this bounds the memory and thread count of a process.
CHUNK = 32
#: ffmpeg processes run at once (each decodes single-threaded, so this is the CPU parallelism).
JOBS = 2
FRAME_NAME = "{:06d}.jpg"


class GridError(RuntimeError):
    """The media cannot be sampled (ffprobe/ffmpeg failed, no video stream, no frames)."""


@dataclass(frozen=True)
class GridSpec:
    """The grid part of a condition, plus the per-cell overrides (jpeg_q, max_frames)."""

    fps: float = 1.0
    max_frames: int = 256
    longest_side: int = 768
    jpeg_q: int = 4

    def __post_init__(self):
        if not (self.fps > 0 and self.max_frames >= 1 and self.longest_side >= 16 and 2 <= self.jpeg_q <= 31):
            raise ValueError(f"invalid grid {self}")

    def key(self) -> str:
        return f"fps{self.fps:g}-n{self.max_frames}-ls{self.longest_side}-q{self.jpeg_q}"


@dataclass
class MediaInfo:
    """What the grid needs to know about a video, from a demux-only probe."""

    duration: Fraction          # seconds, from the container (format) duration
    width: int
    height: int
    pts: list[Fraction]         # presentation time of every video frame, sorted, relative to start
    start_time: Fraction = Fraction(0)
    key_pts: list[Fraction] = field(default_factory=list)  # keyframes' presentation times (if known)

    def summary(self) -> dict[str, Any]:
        return {"duration_s": float(self.duration), "width": self.width, "height": self.height,
                "n_source_frames": len(self.pts), "start_time_s": float(self.start_time)}


# ---------------------------------------------------------------------------------------------
# pure grid arithmetic
# ---------------------------------------------------------------------------------------------

def grid_count(duration: Fraction | float | str, spec: GridSpec) -> int:
    """How many timestamps grid_times gives for a match of `duration` seconds, without making them (a
    reader checks a recorded count before it builds a grid a hostile record sized)."""
    d = Fraction(str(duration)) if not isinstance(duration, Fraction) else duration
    if d <= 0:
        raise GridError(f"media duration {float(d)} s is not positive")
    return min(math.ceil(d * Fraction(str(spec.fps))), spec.max_frames)


def grid_times(duration: Fraction | float | str, spec: GridSpec) -> tuple[list[Fraction], Fraction]:
    """(t_k for k = 0..n-1, fps_eff) for a match of `duration` seconds; all t_k < duration."""
    d = Fraction(str(duration)) if not isinstance(duration, Fraction) else duration
    if d <= 0:
        raise GridError(f"media duration {float(d)} s is not positive")
    fps = Fraction(str(spec.fps))
    n_native = math.ceil(d * fps)  # timestamps k/fps in [0, d)
    if n_native <= spec.max_frames:
        return [Fraction(k) / fps for k in range(n_native)], fps
    n = spec.max_frames
    return [Fraction(k) * d / n for k in range(n)], Fraction(n) / d


def recall_ceiling(fps_eff: float | Fraction, tolerance_s: float) -> float:
    """The highest reachable T1 recall with frame spacing 1/fps_eff: min(1, 2*TOL/d)."""
    return min(1.0, 2.0 * float(tolerance_s) * float(fps_eff))


def output_size(width: int, height: int, longest_side: int) -> tuple[int, int]:
    """Scale so the longest side is at most `longest_side`; never upscale."""
    long_ = max(width, height)
    if long_ <= longest_side:
        return width, height
    s = Fraction(longest_side, long_)
    return max(1, round(width * s)), max(1, round(height * s))


def source_indices(pts: Sequence[Fraction], times: Sequence[Fraction]) -> list[int]:
    """j_k = index of the last source frame with pts <= t_k (frame 0 when t_k precedes every pts)."""
    if not pts:
        raise GridError("the video has no frames")
    return [max(0, bisect.bisect_right(pts, t) - 1) for t in times]


def seek_point(pts: Sequence[Fraction], j: int) -> Fraction:
    """A time strictly between frame j-1 and frame j, so an accurate seek outputs frame j."""
    if j == 0:
        return Fraction(0)
    return (pts[j - 1] + pts[j]) / 2


def _fmt_time(t: Fraction) -> str:
    # microsecond resolution, rounded toward the midpoint's interior (frames are >= 1 ms apart)
    return f"{float(t):.6f}"


# ---------------------------------------------------------------------------------------------
# commands (shared by the native runner and the Harbor agent)
# ---------------------------------------------------------------------------------------------

def probe_commands(media: str) -> list[list[str]]:
    """Two demux-only ffprobe commands: [stream/format info as JSON, packet pts (one per line)]."""
    info = ["ffprobe", "-v", "error", "-select_streams", "v:0",
            "-show_entries", "stream=width,height,time_base,start_time:format=duration,start_time",
            "-of", "json", media]
    pkts = ["ffprobe", "-v", "error", "-select_streams", "v:0",
            "-show_entries", "packet=pts,flags", "-of", "csv=p=0", media]
    return [info, pkts]


def parse_probe(info_json: str, pts_csv: str) -> MediaInfo:
    try:
        info = json.loads(info_json)
        stream = info["streams"][0]
        tb = Fraction(stream["time_base"])
        width, height = int(stream["width"]), int(stream["height"])
        fmt = info.get("format", {})
        duration = Fraction(fmt.get("duration") or "0")
        start = Fraction(fmt.get("start_time") or "0")
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        raise GridError(f"ffprobe gave no usable video stream: {exc!r}: {info_json[:300]!r}") from exc
    raw, keys = [], []
    for line in pts_csv.split():
        fields = line.strip().split(",")
        if not fields[0] or fields[0] == "N/A":
            continue
        raw.append(int(fields[0]))
        if len(fields) > 1 and "K" in fields[1]:
            keys.append(int(fields[0]))
    pts = sorted(set(Fraction(p) * tb - start for p in raw))
    if not pts:
        raise GridError("ffprobe listed no video packets with a pts")
    if duration <= 0:
        duration = pts[-1] + (pts[-1] - pts[-2] if len(pts) > 1 else Fraction(1))
    return MediaInfo(duration=duration, width=width, height=height, pts=pts, start_time=start,
                     key_pts=sorted(set(Fraction(p) * tb - start for p in keys)))


@dataclass
class GridPlan:
    """Everything decided before any frame is decoded."""

    spec: GridSpec
    video_ts: list[Fraction]
    fps_eff: Fraction
    source_index: list[int]
    source_pts: list[Fraction]
    out_w: int
    out_h: int

    @property
    def n(self) -> int:
        return len(self.video_ts)

    def ts_floats(self) -> list[float]:
        return [float(t) for t in self.video_ts]


def plan_grid(media: MediaInfo, spec: GridSpec) -> GridPlan:
    times, fps_eff = grid_times(media.duration, spec)
    idx = source_indices(media.pts, times)
    w, h = output_size(media.width, media.height, spec.longest_side)
    return GridPlan(spec=spec, video_ts=times, fps_eff=fps_eff, source_index=idx,
                    source_pts=[media.pts[j] for j in idx], out_w=w, out_h=h)


#: What a seek costs beyond decoding, in decoded-frame equivalents (process, demuxer, decoder and
#: encoder set-up per still); used only to choose between the two ways of making the same stills.
SEEK_OVERHEAD_FRAMES = 15


def decode_costs(plan: GridPlan, pts: Sequence[Fraction], key_pts: Sequence[Fraction]) -> tuple[int, int]:
    """(frames decoded by seeking, frames decoded by one pass) for this plan, from the keyframe list."""
    if not key_pts:
        return 0, len(pts)  # unknown keyframes: assume seeking is cheap
    key_idx = [bisect.bisect_left(pts, k) for k in key_pts]
    seek = 0
    for j in sorted(set(plan.source_index)):
        kpos = bisect.bisect_right(key_idx, j) - 1
        k0 = key_idx[kpos] if kpos >= 0 else 0
        seek += (j - k0 + 1) + SEEK_OVERHEAD_FRAMES
    return seek, max(plan.source_index) + 1


def choose_mode(plan: GridPlan, pts: Sequence[Fraction], key_pts: Sequence[Fraction]) -> str:
    """'seek' (a GOP per still) or 'pass' (one decode pass selecting the stills), whichever decodes less."""
    seek, one_pass = decode_costs(plan, pts, key_pts)
    return "seek" if seek < one_pass else "pass"


@dataclass
class Extraction:
    """The ffmpeg commands that make a plan's stills, then the renames/copies that name them.

    `renames` are (source file, still file, copy?) inside out_dir: the one-pass mode writes each
    distinct source frame once (u000000.jpg, ...) and the stills are named after it."""

    mode: str
    cmds: list[list[str]]
    renames: list[tuple[str, str, bool]] = field(default_factory=list)


def _encode_args(plan: GridPlan) -> list[str]:
    return ["-an", "-sn", "-dn", "-map_metadata", "-1", "-c:v", "mjpeg", "-q:v", str(plan.spec.jpeg_q),
            "-fflags", "+bitexact", "-flags:v", "+bitexact", "-f", "image2"]


def frame_commands(media: str, plan: GridPlan, pts: Sequence[Fraction], out_dir: str,
                   chunk: int = CHUNK, key_pts: Sequence[Fraction] = (), mode: str = "auto") -> Extraction:
    """How to write plan.n stills `out_dir/000000.jpg`...: the same decoded frames either way.

    seek: each still k is one input opened with an accurate seek to a point strictly between its
      source frame and the one before, and one output taking exactly one frame of it (`chunk`
      stills per process).  Decodes one GOP per still: the fast way for long GOP-spaced grids.
    pass: one decode of the video up to the last still, a `select` filter keeping exactly the source
      frames (by timestamp, within a third of the smallest frame gap).  The fast way when the stills
      are denser than the keyframes.
    Both scale (bicubic) to out_w x out_h and encode JPEG at -q:v jpeg_q, bit-exact (no encoder
    version in the file).  mode="auto" picks the one that decodes fewer frames.
    """
    if mode == "auto":
        mode = choose_mode(plan, pts, key_pts)
    out = out_dir.rstrip("/")
    vf = f"scale={plan.out_w}:{plan.out_h}:flags=bicubic"
    if mode == "seek":
        cmds = []
        for c0 in range(0, plan.n, chunk):
            ks = range(c0, min(plan.n, c0 + chunk))
            cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
            for k in ks:
                # relative to the file's start: ffmpeg adds the container start_time to -ss itself
                ss = seek_point(pts, plan.source_index[k])
                cmd += ["-threads", "1", "-accurate_seek", "-ss", _fmt_time(ss), "-i", media]
            for i, k in enumerate(ks):
                cmd += ["-map", f"{i}:v:0", "-vf", vf, "-frames:v", "1", *_encode_args(plan), "-update", "1",
                        f"{out}/{FRAME_NAME.format(k)}"]
            cmds.append(cmd)
        return Extraction("seek", cmds)
    if mode != "pass":
        raise ValueError(f"unknown extraction mode {mode!r}")
    uniq = sorted(set(plan.source_index))
    gaps = [b - a for a, b in zip(pts, pts[1:])]
    h = min(Fraction(1, 2000), min(gaps) / 3) if gaps else Fraction(1, 2000)
    terms = [f"between(t,{float(pts[j] - h):.9f},{float(pts[j] + h):.9f})" for j in uniq]
    # ffmpeg's expression parser refuses a flat chain of ~100 terms: group them 16 to a parenthesis
    terms = "+".join("(" + "+".join(terms[i:i + 16]) + ")" for i in range(0, len(terms), 16))
    last = float(pts[uniq[-1]] + (gaps[-1] if gaps else Fraction(1)))
    cmd = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-t", f"{last:.6f}", "-i", media,
           "-map", "0:v:0", "-vf", f"select='{terms}',{vf}", "-fps_mode", "passthrough", "-enc_time_base:v", "-1", *_encode_args(plan),
           "-start_number", "0", f"{out}/u%06d.jpg"]
    pos = {j: i for i, j in enumerate(uniq)}
    renames, named = [], {}
    for k, j in enumerate(plan.source_index):
        if j in named:
            renames.append((FRAME_NAME.format(named[j]), FRAME_NAME.format(k), True))
        else:
            renames.append((f"u{pos[j]:06d}.jpg", FRAME_NAME.format(k), False))
            named[j] = k
    return Extraction("pass", [cmd], renames)


def shell_script(ex: Extraction, out_dir: str, jobs: int = JOBS) -> str:
    """The extraction as one POSIX shell script (for `environment.exec` in the Harbor container):
    the same commands, `jobs` at a time as `extract_frames` runs them on the host, then the renames;
    any failure fails the script."""
    q = shlex.quote
    lines = ["set -e", f"rm -rf {q(out_dir)}", f"mkdir -p {q(out_dir)}"]
    for w in range(0, len(ex.cmds), max(1, jobs)):
        wave = ex.cmds[w:w + max(1, jobs)]
        lines.append("pids=")
        lines += [f"{shlex.join(c)} & pids=\"$pids $!\"" for c in wave]
        lines.append('for p in $pids; do wait "$p"; done')
    d = out_dir.rstrip("/")
    lines += [f"{'cp' if copy else 'mv'} {q(d + '/' + a)} {q(d + '/' + b)}" for a, b, copy in ex.renames]
    return "\n".join(lines) + "\n"


def apply_renames(ex: Extraction, out_dir: Path) -> None:
    for a, b, copy in ex.renames:
        if copy:
            shutil.copyfile(out_dir / a, out_dir / b)
        else:
            os.replace(out_dir / a, out_dir / b)


def mp4_command(frames_dir: str, n: int, out_path: str) -> list[str]:
    """One lossless 1 FPS H.264 MP4 of the stills, in order (the declared video transport)."""
    return ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
            "-framerate", "1", "-start_number", "0", "-i", str(Path(frames_dir) / "%06d.jpg"),
            "-frames:v", str(n), "-c:v", "libx264", "-qp", "0", "-preset", "medium",
            "-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1",
            "-movflags", "+faststart", out_path]


# ---------------------------------------------------------------------------------------------
# running the commands locally
# ---------------------------------------------------------------------------------------------

def _run(cmd: Sequence[str], timeout: float | None = None) -> str:
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError as exc:
        raise GridError(f"{cmd[0]} is not on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise GridError(f"{cmd[0]} timed out after {timeout} s") from exc
    if p.returncode != 0:
        raise GridError(f"{shlex.join(cmd[:3])} ... failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    return p.stdout


def probe(media: str | os.PathLike) -> MediaInfo:
    info_cmd, pts_cmd = probe_commands(str(media))
    return parse_probe(_run(info_cmd, 600), _run(pts_cmd, 1800))




@dataclass
class FrameSet:
    """The sampled stills of one cell and their receipt data."""

    frames_dir: Path
    plan: GridPlan
    media: MediaInfo
    frame_sha256: list[str]
    frame_bytes: list[int]
    media_sha256: str | None = None
    commands: list[list[str]] = field(default_factory=list)
    mode: str | None = None

    def paths(self) -> list[Path]:
        return [self.frames_dir / FRAME_NAME.format(k) for k in range(self.plan.n)]

    def receipt(self) -> dict[str, Any]:
        p = self.plan
        return {
            "media": {**self.media.summary(), "sha256": self.media_sha256},
            "grid": {**asdict(p.spec), "fps_eff": float(p.fps_eff), "n_frames": p.n,
                     "width": p.out_w, "height": p.out_h},
            "extraction": self.mode,
            "video_ts": p.ts_floats(),
            "source_pts": [float(t) for t in p.source_pts],
            "source_index": list(p.source_index),
            "frames": [{"sha256": s, "bytes": b} for s, b in zip(self.frame_sha256, self.frame_bytes)],
            "frames_total_bytes": sum(self.frame_bytes),
        }


def hash_frames(frames_dir: Path, n: int) -> tuple[list[str], list[int]]:
    shas, sizes = [], []
    for k in range(n):
        p = Path(frames_dir) / FRAME_NAME.format(k)
        if not p.is_file() or p.stat().st_size == 0:
            raise GridError(f"still {k} ({p.name}) was not written")
        data = p.read_bytes()
        if data[:2] != b"\xff\xd8":
            raise GridError(f"still {k} ({p.name}) is not a JPEG")
        shas.append(sha256_bytes(data))
        sizes.append(len(data))
    return shas, sizes


def extract_frames(media: str | os.PathLike, spec: GridSpec, out_dir: str | os.PathLike,
                   info: MediaInfo | None = None, timeout: float | None = 3600, jobs: int = JOBS,
                   mode: str = "auto") -> FrameSet:
    """Sample the grid of `media` into `out_dir` (replaced) with the shared commands."""
    media = str(media)
    info = info or probe(media)
    plan = plan_grid(info, spec)
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ex = frame_commands(media, plan, info.pts, str(out), key_pts=info.key_pts, mode=mode)
    cmds = ex.cmds
    if len(cmds) > 1 and jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(lambda c: _run(c, timeout), cmds))
    else:
        for c in cmds:
            _run(c, timeout)
    apply_renames(ex, out)
    shas, sizes = hash_frames(out, plan.n)
    return FrameSet(frames_dir=out, plan=plan, media=info, frame_sha256=shas, frame_bytes=sizes,
                    commands=cmds, mode=ex.mode)


#: The stills cache's root when neither --cache-dir nor this variable names one: <checkout>/.cache/protocol_a
#: (run-a writes it, the explorer reads it).
CACHE_ENV = "VA_CACHE_DIR"


def cache_root(explicit: str | os.PathLike | None = None) -> Path:
    """Where the stills cache is: `explicit`, else $VA_CACHE_DIR, else <checkout>/.cache/protocol_a."""
    return Path(explicit or os.environ.get(CACHE_ENV) or paths.REPO_ROOT / ".cache" / "protocol_a")


class FrameCache:
    """Stills cached per (media SHA-256, grid), so every model of a sweep reuses one extraction.

    <root>/<media sha>/<grid key>/{frames/000000.jpg..., receipt.json}; written to a temporary
    sibling and renamed into place, so concurrent workers never see a half-written entry.
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def get(self, media: str | os.PathLike, spec: GridSpec, media_sha256: str | None = None) -> FrameSet:
        sha = media_sha256 or sha256_file(media)
        entry = self.root / sha / spec.key()
        fs = self._load(entry, spec, sha)
        if fs is not None:
            return fs
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
        try:
            fs = extract_frames(media, spec, tmp / "frames")
            fs.media_sha256 = sha
            (tmp / "entry.json").write_text(json.dumps(_entry_doc(fs)), encoding="utf-8")
            try:
                os.rename(tmp, entry)
            except OSError:  # another worker won the race: use its entry
                shutil.rmtree(tmp, ignore_errors=True)
                loaded = self._load(entry, spec, sha)
                if loaded is None:
                    raise
                return loaded
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return self._load(entry, spec, sha) or fs

    @staticmethod
    def _load(entry: Path, spec: GridSpec, sha: str) -> FrameSet | None:
        doc_path = entry / "entry.json"
        if not doc_path.is_file():
            return None
        doc = json.loads(doc_path.read_text(encoding="utf-8"))
        m = doc["media"]
        info = MediaInfo(duration=Fraction(m["duration"]), width=m["width"], height=m["height"],
                         pts=[Fraction(p) for p in m["pts"]], start_time=Fraction(m["start_time"]),
                         key_pts=[Fraction(p) for p in m.get("key_pts", [])])
        plan = plan_grid(info, spec)
        frames_dir = entry / "frames"
        shas, sizes = doc["frame_sha256"], doc["frame_bytes"]
        if len(shas) != plan.n:
            return None
        return FrameSet(frames_dir=frames_dir, plan=plan, media=info, frame_sha256=shas,
                        frame_bytes=sizes, media_sha256=sha, mode=doc.get("mode"))


def _entry_doc(fs: FrameSet) -> dict[str, Any]:
    m = fs.media
    return {"media": {"duration": str(m.duration), "width": m.width, "height": m.height,
                      "pts": [str(p) for p in m.pts], "start_time": str(m.start_time),
                      "key_pts": [str(p) for p in m.key_pts]},
            "frame_sha256": fs.frame_sha256, "frame_bytes": fs.frame_bytes, "mode": fs.mode}
