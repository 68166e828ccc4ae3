"""The one progress bar every long command shows (build-cases, make-harbor, validate, oracle-check,
run-a, run-b, baselines).

    with progress.bar(len(todo), "run-b", "cell", enabled=not a.no_progress) as bar:
        for ...:
            bar.update(1)
            bar.write("a line for the log")           # to stdout, around the bar

What every bar does, in one place:
- its total is known when it starts (a required argument), so it shows N/TOTAL and an ETA, never
  "0case [00:00, ?case/s]"; a command whose total grows as it learns more calls `set_total`;
- it names its unit ("case", "task", "trial", "cell");
- it is drawn on stderr and only when stderr is a terminal: in a log, a pipe or CI nothing of it is
  written (no carriage returns, no partial lines); stdout, which scripts parse, never carries it;
- `enabled=False` (the commands' `--no-progress`) or the environment variable VA_NO_PROGRESS=1
  turns it off;
- it disappears when it closes (the command prints its own summary line), also on an error;
- a bar opened while another is open (run-b inside `baselines`) draws nothing of its own: its
  progress counts in the outer bar, inside the outer bar's current `stage` (unless it was turned
  off with enabled=False: then it counts nowhere).

`watch(bar, count)` advances a bar from something observed outside the process, e.g. the trial
result files a `harbor run` child writes into its job folder.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import weakref
from typing import Any, Callable, Iterable, Iterator, TextIO

ENV = "VA_NO_PROGRESS"

_lock = threading.RLock()
_open: list[weakref.ref] = []  # bars open in this process, outermost first (a leaked bar does not stay)


def _innermost() -> "Bar | None":
    while _open:
        b = _open[-1]()
        if b is not None and not b._closed:
            return b
        _open.pop()
    return None


def wanted(enabled: bool | None = None, stream: TextIO | None = None) -> bool:
    """Whether a bar is drawn: not turned off (flag or $VA_NO_PROGRESS) and stderr is a terminal."""
    if enabled is False:
        return False
    if os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no"):
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed or a stand-in without isatty
        return False


class Bar:
    """A progress bar with a known total (see the module doc). Use `bar()` to make one."""

    def __init__(self, total: int, desc: str, unit: str, *, enabled: bool | None = None, initial: int = 0,
                 stream: TextIO | None = None):
        if total is None or int(total) < 0:
            raise ValueError(f"a progress bar needs its total up front, not {total!r}")
        self.total, self.desc, self.unit = int(total), desc, unit
        self.n = int(initial)
        self._stage: tuple[int, int] | None = None  # (start, end) of the current stage
        self._stage_label = ""
        self._tqdm = None
        self._closed = False
        with _lock:  # turned off (enabled=False): it counts nowhere, not even in an outer bar
            self.parent = None if enabled is False else _innermost()
            _open.append(weakref.ref(self))
        self._stream = sys.stderr if stream is None else stream
        if self.parent is None and wanted(enabled, self._stream):
            # deferred: tqdm (about 0.1 s of CPU), only for a bar on a terminal
            from tqdm import tqdm

            self._tqdm = tqdm(total=self.total, initial=self.n, desc=desc, unit=unit, file=self._stream,
                              leave=False, dynamic_ncols=True)  # TQDM_MININTERVAL etc. still apply
            # while the bar is drawn, every line printed by this process (any module, any thread)
            # goes around it: the bar is cleared, the line written whole, the bar drawn again
            self._saved = (sys.stdout, sys.stderr)
            self._around = (_AroundBar(sys.stdout, self._tqdm), _AroundBar(sys.stderr, self._tqdm))
            sys.stdout, sys.stderr = self._around

    # -- state -----------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        """True when this bar (not a parent) is drawing on a terminal."""
        return self._tqdm is not None

    @property
    def drawing(self) -> bool:
        """True when this bar or the outer bar it counts in is drawing on a terminal."""
        return self._drawing() is not None

    def update(self, n: int = 1) -> None:
        with _lock:
            self.n += n
            if self.parent is not None:
                self.parent._child_update(n)
            elif self._tqdm is not None:
                self._tqdm.update(n)

    def set_n(self, n: int) -> None:
        """Set the count (what `watch` observed); never goes back."""
        with _lock:
            if n > self.n:
                self.update(n - self.n)

    def set_total(self, total: int) -> None:
        """A total learnt later (more tasks found): the bar keeps its count."""
        with _lock:
            self.total = int(total)
            if self._tqdm is not None:
                self._tqdm.total = self.total
                self._tqdm.refresh()

    def set_postfix(self, postfix: str | dict[str, Any] | None, refresh: bool = True) -> None:
        """Text after the counts: the current item, or counts by outcome (a dict)."""
        if isinstance(postfix, dict):
            postfix = ", ".join(f"{k}={v}" for k, v in postfix.items())
        with _lock:
            if self.parent is not None:
                self.parent._child_postfix(f"{self.desc} {postfix or ''}".strip(), refresh)
            elif self._tqdm is not None:
                label = self._stage_label if self._stage else ""
                self._tqdm.set_postfix_str(" ".join(filter(None, [label, postfix or ""])), refresh=refresh)

    set_postfix_str = set_postfix

    def write(self, line: str, file: TextIO | None = None) -> None:
        """Print a line (to stdout unless `file` says otherwise); a plain print() does the same."""
        print(line, file=sys.stdout if file is None else file, flush=True)

    def wrap(self, iterable: Iterable) -> Iterator:
        """Yield the items of `iterable`, counting each one when it is done."""
        for item in iterable:
            yield item
            self.update(1)

    # -- stages of an outer bar ------------------------------------------------------------------
    @contextlib.contextmanager
    def stage(self, n: int, label: str = "") -> Iterator["Bar"]:
        """The next `n` units are one stage (say, one run-b sweep inside baselines): a bar opened
        inside it counts here, and at its end the count is exactly start + n (units skipped by the
        stage, like cells already done, are counted then)."""
        with _lock:
            start = self.n
            self._stage, self._stage_label = (start, start + n), label
        self.set_postfix("")
        try:
            yield self
        finally:
            with _lock:
                self._stage = None
                self.set_n(start + n)

    def _child_update(self, n: int) -> None:
        if self._stage is not None:  # a child never counts past its stage
            n = max(0, min(n, self._stage[1] - self.n))
        self.update(n)

    def _child_postfix(self, text: str, refresh: bool) -> None:
        if self.parent is not None:
            self.parent._child_postfix(text, refresh)
        elif self._tqdm is not None:
            label = self._stage_label if self._stage else ""
            self._tqdm.set_postfix_str(" ".join(filter(None, [label, text])), refresh=refresh)

    def _drawing(self):
        b: Bar | None = self
        while b is not None and b.parent is not None:
            b = b.parent
        return b._tqdm if b is not None else None

    # -- life --------------------------------------------------------------------------------------
    def close(self) -> None:
        with _lock:
            if self._closed:
                return
            self._closed = True
            _open[:] = [r for r in _open if r() is not None and r() is not self]
            if self._tqdm is not None:
                self._tqdm.close()  # leave=False: the line is cleared
                for w in self._around:  # then what was printed without its newline yet
                    w.flush_partial()
                if sys.stdout is self._around[0]:  # unless someone swapped it since
                    sys.stdout = self._saved[0]
                if sys.stderr is self._around[1]:
                    sys.stderr = self._saved[1]

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _AroundBar(io.TextIOBase):
    """sys.stdout/sys.stderr while a bar is drawn: the bar is cleared, whole lines written, the bar redrawn."""

    def __init__(self, stream: TextIO, drawn):
        self._stream, self._drawn, self._partial = stream, drawn, ""
        self._pid = os.getpid()

    def write(self, text: str) -> int:
        if os.getpid() != self._pid:  # a forked worker: its copy of the bar is stale, never draw it
            return self._stream.write(text)
        with _lock:
            self._partial += text
            if "\n" in self._partial:
                lines, self._partial = self._partial.rsplit("\n", 1)
                self._drawn.clear()
                self._stream.write(lines + "\n")
                self._stream.flush()
                self._drawn.refresh()
        return len(text)

    def flush_partial(self) -> None:
        with _lock:
            if self._partial:
                self._stream.write(self._partial)
                self._partial = ""
            self._stream.flush()

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self):  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8")

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def current() -> Bar | None:
    """The innermost open bar, if any (a step that prints a lot, like a `harbor run` child, asks
    whether a bar is being drawn before it lets the child write to the terminal)."""
    with _lock:
        return _innermost()


def bar(total: int, desc: str, unit: str, *, enabled: bool | None = None, initial: int = 0,
        stream: TextIO | None = None) -> Bar:
    """A bar of `total` units named `unit` (see the module doc); use it as a context manager."""
    return Bar(total, desc, unit, enabled=enabled, initial=initial, stream=stream)


@contextlib.contextmanager
def watch(b: Bar, count: Callable[[], int], interval: float = 1.0) -> Iterator[Bar]:
    """While the block runs, set `b`'s count from `count()` every `interval` seconds (and once at
    the end). `count` must be cheap and must not raise for a missing folder."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(interval):
            with contextlib.suppress(OSError):
                b.set_n(min(count(), b.total))  # retried trials, say, never count past the total

    t = threading.Thread(target=poll, name="progress-watch", daemon=True)
    t.start()
    try:
        yield b
    finally:
        stop.set()
        t.join()
        with contextlib.suppress(OSError):
            b.set_n(min(count(), b.total))
