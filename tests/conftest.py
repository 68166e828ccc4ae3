import ast
import functools
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(scope="session")
def J():
    """The judge module, loaded from judge/judge.py exactly as the scorer loads it."""
    from video_arena.core.judge_loader import load_judge
    return load_judge()


@pytest.fixture
def import_refused(tmp_path, capsys):
    """import_refused(game, fmt, *files) -> the one line `import-cases --game G --FMT FILE..` printed when it
    refused the record (exit 2, no traceback, no tasks tree written); fails the test otherwise."""
    from video_arena.importing import cli as import_cli

    def run(game: str, fmt: str, *files) -> str:
        tree = tmp_path / "refused-tree"
        rc = import_cli.main(["--tasks-root", str(tree), "--game", game, f"--{fmt}", *map(str, files),
                              "--licence", "test"])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
        assert "nothing was written" in err and not tree.exists(), err
        return err
    return run


@pytest.fixture
def import_refuses_unreadable(tmp_path, import_refused):
    """import_refuses_unreadable(game, fmt, cap, good_file): a record file of cap + 1 bytes and a symbolic
    link to a good one are each refused in one line (a FIFO too, without blocking)."""
    def run(game: str, fmt: str, cap: int, good) -> None:
        big = tmp_path / f"big.{fmt}"
        with open(big, "wb") as f:
            f.truncate(cap + 1)
        assert f"more than the {cap}" in import_refused(game, fmt, big)
        link = tmp_path / f"link.{fmt}"
        link.symlink_to(good)
        assert "cannot be read" in import_refused(game, fmt, link)
        fifo = tmp_path / f"fifo.{fmt}"
        os.mkfifo(fifo)
        assert "not a regular file" in import_refused(game, fmt, fifo)
    return run


@pytest.fixture(scope="module")
def no_tasks_env():
    """A test module's own tasks tree is the tasks and media root, whatever the shell exports."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("VA_MEDIA_ROOT", raising=False)
        mp.delenv("VA_TASKS_ROOT", raising=False)
        yield


# Fixtures whose tests share the one Docker daemon of the machine (its containers, images, networks).
DOCKER_FIXTURES = frozenset({"docker", "sandbox_image", "podman_image"})
TESTS = Path(__file__).resolve().parent


def _requested(tree: ast.AST) -> dict[str, set[str]]:
    """Every function of a module (tests and fixtures) and the argument names it asks for."""
    return {f.name: {a.arg for a in f.args.args + f.args.kwonlyargs}
            for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _reaching(functions: dict[str, set[str]], names: set[str]) -> set[str]:
    """`names` and every function that asks for one of them, directly or through another such function."""
    names = set(names)
    while True:
        more = {name for name, args in functions.items() if args & names} - names
        if not more:
            return names
        names |= more


@functools.lru_cache(maxsize=1)
def docker_test_files() -> frozenset[str]:
    """The test files (paths relative to the project) that ask for Docker, directly or through a fixture
    of their own or of a conftest.py, read from the source (the xdist controller does not collect)."""
    trees = {f: ast.parse(f.read_text(encoding="utf-8")) for f in TESTS.rglob("*.py")}
    functions = {f: _requested(tree) for f, tree in trees.items()}
    # conftest fixtures that ask for a Docker fixture are Docker fixtures themselves
    names = _reaching({n: a for f, fs in functions.items() if f.name == "conftest.py" for n, a in fs.items()},
                      set(DOCKER_FIXTURES))
    out = set()
    for f, tree in trees.items():
        if not f.name.startswith("test_"):
            continue
        local = dict(functions[f])
        for node in ast.walk(tree):  # fixtures imported from another test module count as its own
            if isinstance(node, ast.ImportFrom) and node.module:
                module_file = f"{node.module.replace('.', '/')}.py"
                other = next((o for o in (f.parent / module_file, TESTS / module_file) if o in functions), None)
                if other is not None:
                    local.update({a.name: functions[other][a.name] for a in node.names if a.name in functions[other]})
        uses = _reaching(local, names)
        if any(args & uses for name, args in local.items() if name.startswith("test")):
            out.add(f.relative_to(TESTS.parent).as_posix())
    return frozenset(out)


def pytest_collection_modifyitems(config, items):
    """A test that uses Docker in a file the xdist scheduler does not know as a Docker file would run
    beside another Docker test: refused, never run so."""
    known = docker_test_files()
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        if not DOCKER_FIXTURES.isdisjoint(getattr(item, "fixturenames", ())) and path not in known:
            raise pytest.UsageError(f"{item.nodeid} uses Docker but tests/conftest.py's docker_test_files() "
                                    "does not find it in its file: ask for the fixture by its argument name")


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` (the default, see pyproject.toml) with one change: every file whose tests use
    Docker is one unit of work for one worker, in collection order, as in a serial run; every other
    file goes whole to a free worker, so its module fixtures are made once. (With Docker tests on two
    workers at once, tests/e2e/test_image.py's long-lived container was gone mid-module, "No such
    container". xdist's own `--dist loadgroup` does not group under pytest 9.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    docker_files = docker_test_files()

    class DockerFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "docker" if path in docker_files else path

        def _assign_work_unit(self, node) -> None:
            # the Docker files first: they are the longest unit, so the other workers share the rest meanwhile
            if "docker" in self.workqueue:
                self.workqueue.move_to_end("docker", last=False)
            super()._assign_work_unit(node)

    return DockerFilesTogether(config, log)


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pytest-xdist, the default): one worker per core, at most 4, since the end-to-end tests each
    run Docker, Harbor and ffmpeg, which use more than one core themselves. VA_TEST_WORKERS overrides."""
    wanted = os.environ.get("VA_TEST_WORKERS", "")
    if wanted:
        return int(wanted)
    return max(1, min(4, len(os.sched_getaffinity(0))))
