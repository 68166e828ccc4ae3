"""The shared progress bar (video_arena/progress.py): drawn with a total and an ETA on a terminal,
nothing at all off one, never on stdout."""
from __future__ import annotations

import io
import re
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pty_run import no_bar, python_cmd, run
from video_arena import progress as P

DEMO = textwrap.dedent("""
    import sys, time
    from video_arena import progress as P
    with P.bar(4, "demo", "case", enabled=None if len(sys.argv) < 2 else sys.argv[1] == "on") as b:
        for i in range(4):
            time.sleep(0.25)
            b.update(1)
            b.write(f"line {i}")
    print("result 4")
""")


def test_on_a_terminal_the_bar_shows_count_of_total_eta_and_unit_on_stderr_only():
    r = run(python_cmd("-c", DEMO), tty=True)
    assert r.rc == 0
    counts = r.counts()
    assert counts and {t for _, t in counts} == {4}, r.stderr  # the total from the start
    assert max(n for n, _ in counts) >= 3
    assert "case/s" in r.stderr and "demo" in r.stderr
    assert "<00:0" in r.stderr  # an ETA once a unit is done (not only "<?")
    assert r.stdout == "line 0\nline 1\nline 2\nline 3\nresult 4\n"  # stdout: exactly the lines
    assert re.search(r"\r +\r$", r.stderr)  # the bar's line is blanked when it closes


def test_lines_printed_anywhere_during_the_bar_come_out_whole_on_the_same_terminal():
    code = DEMO.replace('b.write(f"line {i}")', 'print(f"line {i}"); print(f"err {i}", file=sys.stderr)')
    r = run(python_cmd("-c", code), tty=True, merged=True)
    assert r.rc == 0 and r.counts()
    for i in range(4):  # the bar is blanked first, so the line starts at column 0 and is never glued to it
        for line in (f"line {i}", f"err {i}"):
            assert re.search(rf"\r +\r{line}\r\n", r.stderr), (line, r.stderr)
    assert re.search(r"\r +\rresult 4\r\n$", r.stderr)


def test_off_a_terminal_nothing_of_the_bar_is_written():
    r = run(python_cmd("-c", DEMO), tty=False)
    assert r.rc == 0
    assert r.stderr == ""
    assert r.stdout == "line 0\nline 1\nline 2\nline 3\nresult 4\n"


@pytest.mark.parametrize("how", ["flag", "env"])
def test_the_switch_turns_it_off_on_a_terminal(how):
    args, env = (["off"], None) if how == "flag" else ([], {P.ENV: "1"})
    r = run(python_cmd("-c", DEMO, *args), tty=True, env=env)
    assert r.rc == 0 and no_bar(r.stderr), r.stderr
    assert r.stdout.endswith("result 4\n")


def test_a_total_is_required():
    with pytest.raises(ValueError, match="total"):
        P.bar(None, "x", "case")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        P.bar(-1, "x", "case")


def test_wanted_follows_the_stream_and_the_switches(monkeypatch):
    monkeypatch.delenv(P.ENV, raising=False)
    assert P.wanted(None, io.StringIO()) is False

    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert P.wanted(None, Tty()) is True
    assert P.wanted(True, Tty()) is True
    assert P.wanted(False, Tty()) is False
    closed = io.StringIO()
    closed.close()  # isatty raises ValueError
    assert P.wanted(None, closed) is False
    for v, on in (("1", False), ("yes", False), ("0", True), ("", True)):
        monkeypatch.setenv(P.ENV, v)
        assert P.wanted(None, Tty()) is on, v


def test_a_bar_inside_a_bar_counts_in_the_outer_one_within_its_stage():
    with P.bar(10, "outer", "cell", enabled=False) as outer:
        with outer.stage(4, "first"):
            with P.bar(3, "inner", "cell") as inner:  # 1 of the 4 was done before: 3 to run
                assert inner.parent is outer and not inner.active
                inner.update(2)
                assert outer.n == 2
                inner.update(5)  # a child never counts past its stage
                assert outer.n == 4
        assert outer.n == 4
        with outer.stage(6, "second"):
            with P.bar(6, "inner2", "cell") as inner:
                inner.update(1)
            assert outer.n == 5
        assert outer.n == 10  # a stage ends at exactly start + n
    after = P.bar(2, "later", "cell", enabled=False)
    assert after.parent is None  # closed bars are no parents
    after.close()


def test_a_leaked_bar_does_not_adopt_later_bars():
    def leak():
        P.bar(3, "leaked", "cell", enabled=False)  # never closed

    leak()
    with P.bar(2, "fresh", "cell", enabled=False) as b:
        assert b.parent is None


def test_watch_counts_what_appears(tmp_path: Path):
    files = tmp_path / "jobs"

    def count():
        return sum(1 for _ in files.glob("*/result.json")) if files.is_dir() else 0

    def worker():
        for i in range(3):
            time.sleep(0.05)
            (files / f"t{i}").mkdir(parents=True)
            (files / f"t{i}" / "result.json").write_text("{}")

    with P.bar(4, "trials", "trial", enabled=False) as b:
        with P.watch(b, count, interval=0.02):
            t = threading.Thread(target=worker)
            t.start()
            t.join()
            time.sleep(0.1)
            assert b.n == 3
        assert b.n == 3
        b.set_total(6)
        assert b.total == 6


def test_wrap_counts_each_item_when_done():
    with P.bar(3, "w", "task", enabled=False) as b:
        seen = []
        for x in b.wrap(["a", "b", "c"]):
            seen.append((x, b.n))
        assert seen == [("a", 0), ("b", 1), ("c", 2)] and b.n == 3


def test_write_off_a_terminal_goes_to_the_named_stream():
    out = io.StringIO()
    with P.bar(1, "w", "task", enabled=False) as b:
        b.write("hello", file=out)
    assert out.getvalue() == "hello\n"


def test_a_forked_worker_printing_never_draws_its_stale_copy_of_the_bar():
    code = textwrap.dedent("""
        import os, sys, warnings
        warnings.simplefilter("ignore")  # fork() in a process with threads: its warning would race the child
        from video_arena import progress as P
        with P.bar(5, "demo", "case") as b:
            b.update(3)
            pid = os.fork()
            if pid == 0:
                print("child line", flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
            print("parent after", file=sys.stderr)
            b.update(2)
    """)
    r = run(python_cmd("-c", code), tty=True, merged=True)
    assert r.rc == 0
    assert re.search(r"child line\r\n\r +\rparent after\r\n", r.stderr), r.stderr


def test_a_line_without_its_newline_comes_out_after_the_bar_is_gone():
    code = textwrap.dedent("""
        import sys
        from video_arena import progress as P
        with P.bar(2, "demo", "case") as b:
            b.update(1)
            print("half a line", end="", flush=True)
        print(" and its end")
    """)
    r = run(python_cmd("-c", code), tty=True, merged=True)
    assert r.rc == 0
    assert re.search(r"\r +\rhalf a line and its end\r\n$", r.stderr), r.stderr
