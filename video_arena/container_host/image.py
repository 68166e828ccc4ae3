"""Build the sandbox image `video-arena/base` from `image/` (see image/Dockerfile).

    video-arena image build [--tag video-arena/base:latest] [--base-image IMG] [--ca-bundle FILE]
                            [--no-cache] [--reuse] [--mirror URL] [--online-pip] [--rebuild-base]
    video-arena image base  [--tag video-arena/debian:bookworm] [--mirror URL] [--force]
    video-arena image wheelhouse
    video-arena image push  REGISTRY/NAME[:TAG] [--image video-arena/base:latest]   (registry.py)

The build works on hosts that reach neither Docker Hub nor PyPI from inside containers:

1. Base image. `--base-image` if given (present locally or pullable), else `debian:bookworm-slim`
   when present or pullable, else a Debian bookworm base made here with
   `debootstrap --variant=minbase` from the host's own Debian mirror and `docker import`, tagged
   `video-arena/debian:bookworm` and reused by later builds.
2. Wheelhouse. The pinned wheels of image/requirements.txt (CPython 3.11, manylinux) are downloaded
   on the host, whose pip has whatever trust and index configuration the host has, into the
   gitignored `.cache/wheelhouse/`, once per requirements digest.
3. `docker build` of a staged copy of image/ holding the wheelhouse (installed offline) and the
   certificates of `--ca-bundle` (installed with update-ca-certificates, used by pip and apt).
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
import fcntl

from video_arena.container_host import docker_host
from video_arena.container_host.runtimes import RUNTIMES
from video_arena.container_host.subproc import last_line as _last_line
from video_arena.container_host.subproc import run as _run
from video_arena.paths import REPO_ROOT

DEFAULT_TAG = "video-arena/base:latest"
DEFAULT_BASE_IMAGE = "debian:bookworm-slim"
LOCAL_BASE_TAG = "video-arena/debian:bookworm"
SUITE = "bookworm"
PYTHON_VERSION = "3.11"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_SECURITY_MIRROR = "http://deb.debian.org/debian-security"
DIGEST_LABEL = "io.video-arena.build-digest"
PULL_TIMEOUT_S = 180
# manylinux tags a bookworm (glibc 2.36) image can run; pip does not widen these by itself.
MANYLINUX_TAGS = ("manylinux2014", "manylinux_2_17", "manylinux_2_24", "manylinux_2_27", "manylinux_2_28")
_PEM_RE = re.compile(r"-----BEGIN CERTIFICATE-----\s+[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----")


class ImageBuildError(RuntimeError):
    """The image cannot be built; the message names the failing step and what to do about it."""


def image_dir() -> Path:
    return REPO_ROOT / "image"


def cache_dir() -> Path:
    return REPO_ROOT / ".cache"


def _echo_default(msg: str) -> None:
    print(msg, flush=True)


def _docker() -> str:
    cli = docker_host.docker_cli()
    if not cli:
        raise ImageBuildError("docker CLI not found on PATH (install docker.io: run scripts/setup.sh)")
    return cli


def require_daemon(start: bool = True, echo=_echo_default) -> None:
    """Docker must answer; as root an absent daemon is started (video-arena docker start)."""
    ok, reason = docker_host.ensure_docker(start=start, echo=echo)
    if not ok:
        raise ImageBuildError(f"Docker is not usable: {reason}")


# --- images -------------------------------------------------------------------------------------

def image_exists(tag: str) -> bool:
    """True when the local daemon holds `tag`. Raises ImageBuildError when Docker cannot answer."""
    res = _run([_docker(), "image", "inspect", "--format", "{{.Id}}", tag], timeout=30)
    if res.returncode == 0:
        return True
    if "no such image" in (res.stderr + res.stdout).lower():
        return False
    raise ImageBuildError(f"cannot ask Docker about image {tag}: "
                          f"{_last_line(res.stderr) or 'docker image inspect failed'}")


def _inspect(tag: str, fmt: str) -> str:
    res = _run([_docker(), "image", "inspect", "--format", fmt, tag], timeout=30)
    if res.returncode != 0:
        raise ImageBuildError(f"docker image inspect {tag}: {_last_line(res.stderr)}")
    return res.stdout.strip()


def image_id(tag: str) -> str:
    return _inspect(tag, "{{.Id}}")


def image_size(tag: str) -> int:
    return int(_inspect(tag, "{{.Size}}"))


def layer_sizes(tag: str, min_bytes: int = 1_000_000) -> list[tuple[int, str]]:
    """(bytes, what made it) of the image's layers of at least min_bytes, oldest first."""
    res = _run([_docker(), "history", "--human=false", "--no-trunc", "--format", "{{.Size}}\t{{.CreatedBy}}",
                tag], timeout=60)
    if res.returncode != 0:
        raise ImageBuildError(f"docker history {tag}: {_last_line(res.stderr)}")
    layers = []
    for line in reversed(res.stdout.splitlines()):
        size, _, created_by = line.partition("\t")
        if not size.strip().isdigit() or int(size) < min_bytes:
            continue
        what = re.sub(r"^(\|\d+ \S+ )?/bin/sh -c (#\(nop\) )?(set -eux; )?", "", created_by).strip()
        what = re.sub(r"\s+", " ", re.sub(r"COPY dir:[0-9a-f]+", "COPY", what))
        layers.append((int(size), what[:70] or "base image"))
    return layers


def size_report(tag: str) -> str:
    """`<tag>: N bytes (x.xx GB); layers: ...`, the figures `docker images` shows (decimal units)."""
    total = image_size(tag)
    layers = "; ".join(f"{size / 1e6:.0f} MB {what}" for size, what in layer_sizes(tag))
    return f"size of {tag}: {total} bytes ({total / 1e9:.2f} GB); layers of 1 MB or more: {layers}"


def image_label(tag: str, key: str) -> str | None:
    value = _inspect(tag, "{{ index .Config.Labels %s }}" % _go_quote(key))
    return None if value in ("", "<no value>") else value


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def try_pull(tag: str, timeout: float = PULL_TIMEOUT_S) -> tuple[bool, str]:
    res = _run([_docker(), "pull", tag], timeout=timeout)
    if res.returncode == 0:
        return True, ""
    return False, _last_line(res.stderr) or _last_line(res.stdout) or f"docker pull exited {res.returncode}"


# --- the Debian base: debootstrap + docker import -----------------------------------------------

def host_apt_mirrors(root: Path = Path("/")) -> tuple[str | None, str | None]:
    """(Debian mirror, security mirror) from the host's apt sources (one-line and deb822 forms)."""
    files = [root / "etc/apt/sources.list"]
    d = root / "etc/apt/sources.list.d"
    if d.is_dir():
        files += sorted(d.glob("*.list")) + sorted(d.glob("*.sources"))
    main = security = None
    for f in files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        entries: list[tuple[list[str], list[str]]] = []  # (uris, suites)
        if f.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields: dict[str, str] = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line or line[:1].isspace():
                        continue
                    k, v = line.split(":", 1)
                    fields[k.strip().lower()] = v.strip()
                if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
                    entries.append((fields.get("uris", "").split(), fields.get("suites", "").split()))
        else:
            for line in text.splitlines():
                parts = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
                if len(parts) >= 3 and parts[0] == "deb":
                    entries.append(([parts[1]], [parts[2]]))
        for uris, suites in entries:
            for uri in uris:
                if not uri.startswith(("http://", "https://")):
                    continue
                if any(s.endswith("-security") or "/updates" in s for s in suites):
                    security = security or uri.rstrip("/")
                elif SUITE in suites:
                    main = main or uri.rstrip("/")
    return main, security


def _dpkg_arch() -> str:
    res = _run(["dpkg", "--print-architecture"], timeout=10)
    if res.returncode == 0 and res.stdout.strip():
        return res.stdout.strip()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def _mounts_under(path: Path) -> list[str]:
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    prefix = str(path.resolve()) + "/"
    return sorted((m.split()[1] for m in lines if len(m.split()) > 1 and m.split()[1].startswith(prefix)),
                  key=len, reverse=True)


def _remove_rootfs(path: Path) -> None:
    for mount in _mounts_under(path):
        _run(["umount", "-l", mount], timeout=30)
    if not _mounts_under(path):
        shutil.rmtree(path, ignore_errors=True)


_APT_CONF = {
    # the same trims as Debian's official images
    "etc/apt/apt.conf.d/docker-clean": (
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
        '/var/cache/apt/*.bin || true"; };\n'
        'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
        '/var/cache/apt/*.bin || true"; };\n'
        'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'),
    "etc/apt/apt.conf.d/docker-no-languages": 'Acquire::Languages "none";\n',
    "etc/apt/apt.conf.d/docker-gzip-indexes": 'Acquire::GzipIndexes "true";\n',
    "etc/dpkg/dpkg.cfg.d/docker-slim": (
        "path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\n"
        "path-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\n"
        "path-exclude /usr/share/lintian/*\npath-exclude /usr/share/linda/*\n"
        "path-exclude /usr/share/groff/*\npath-exclude /usr/share/locale/*\n"),
    # services never start during apt-get inside a container build
    "usr/sbin/policy-rc.d": "#!/bin/sh\nexit 101\n",
}


def _slim_rootfs(root: Path, mirror: str, security: str) -> None:
    (root / "etc/apt/sources.list").write_text(
        f"deb {mirror} {SUITE} main\n"
        f"deb {mirror} {SUITE}-updates main\n"
        f"deb {security} {SUITE}-security main\n")
    for rel, text in _APT_CONF.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / "usr/sbin/policy-rc.d").chmod(0o755)
    # message translations too: LANG is C.UTF-8 in every image made from this base
    for rel in ("usr/share/man", "usr/share/info", "usr/share/lintian", "usr/share/groff", "usr/share/locale"):
        d = root / rel
        if d.is_dir():
            for child in d.iterdir():
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    doc = root / "usr/share/doc"
    if doc.is_dir():
        for f in sorted(doc.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if f.name == "copyright" or (f.is_dir() and not f.is_symlink() and any(f.iterdir())):
                continue
            if f.is_dir() and not f.is_symlink():
                f.rmdir()
            else:
                f.unlink()
    for rel in ("var/lib/apt/lists", "var/cache/apt/archives", "var/log", "tmp"):
        d = root / rel
        if d.is_dir():
            for child in d.iterdir():
                if child.name in ("partial", "lock"):
                    continue
                shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()


def make_base_image(tag: str = LOCAL_BASE_TAG, mirror: str | None = None,
                    echo=_echo_default) -> float:
    """debootstrap a minimal Debian bookworm and `docker import` it as `tag`; returns seconds."""
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if not debootstrap:
        raise ImageBuildError("no base image could be pulled and debootstrap is not installed "
                              "(apt-get install debootstrap, or run scripts/setup.sh)")
    if os.geteuid() != 0:
        raise ImageBuildError("making the Debian base image with debootstrap needs root "
                              "(or docker load/pull an image and pass --base-image)")
    host_main, host_security = host_apt_mirrors()
    mirror = (mirror or host_main or DEFAULT_MIRROR).rstrip("/")
    security = (host_security or DEFAULT_SECURITY_MIRROR).rstrip("/")
    work = cache_dir() / "debootstrap"
    work.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="rootfs-", dir=work))
    log_path = work / "debootstrap.log"
    t0 = time.monotonic()
    echo(f"base: debootstrap --variant=minbase {SUITE} from {mirror} (log: {log_path})")
    try:
        with open(log_path, "w") as log:
            res = subprocess.run([debootstrap, "--variant=minbase", "--components=main",
                                  f"--arch={_dpkg_arch()}", SUITE, str(root), mirror],
                                 stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if res.returncode != 0:
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-10:])
            raise ImageBuildError(f"debootstrap failed (exit {res.returncode}) from mirror {mirror} "
                                  f"(pass --mirror URL to use another); last lines of {log_path}:\n{tail}")
        if _mounts_under(root):
            raise ImageBuildError(f"debootstrap left file systems mounted under {root}: "
                                  f"{', '.join(_mounts_under(root))}")
        _slim_rootfs(root, mirror, security)
        echo(f"base: docker import as {tag}")
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(root), "-cf", "-",
                                "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "."],
                               stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        imp = subprocess.run([_docker(), "import",
                              "--change", 'CMD ["bash"]', "--change", "ENV LANG=C.UTF-8",
                              "--change", f"LABEL io.video-arena.base=debootstrap-minbase-{SUITE}",
                              "--message", f"debootstrap --variant=minbase {SUITE} {mirror}",
                              "-", tag], stdin=tar.stdout, capture_output=True, text=True)
        tar.stdout.close()
        tar_rc = tar.wait()
        if tar_rc != 0 or imp.returncode != 0:
            raise ImageBuildError(f"docker import of the debootstrap root failed "
                                  f"(tar exit {tar_rc}, import exit {imp.returncode}): "
                                  f"{_last_line(imp.stderr)}")
    finally:
        _remove_rootfs(root)
    seconds = time.monotonic() - t0
    echo(f"base: {tag} made in {seconds:.0f}s")
    return seconds


def resolve_base_image(base_image: str | None = None, mirror: str | None = None,
                       rebuild: bool = False, echo=_echo_default) -> tuple[str, float | None]:
    """The base to build FROM, making it if needed: (tag, seconds spent making it or None)."""
    if base_image and base_image != LOCAL_BASE_TAG:
        if image_exists(base_image):
            return base_image, None
        echo(f"base: {base_image} is not present locally, pulling it")
        ok, err = try_pull(base_image)
        if ok:
            return base_image, None
        raise ImageBuildError(
            f"base image {base_image} is not present and cannot be pulled ({err}); load it with "
            f"`docker load`, or omit --base-image to use {DEFAULT_BASE_IMAGE} or a Debian base made "
            f"with debootstrap ({LOCAL_BASE_TAG})")
    if not rebuild:
        if not base_image and image_exists(DEFAULT_BASE_IMAGE):
            return DEFAULT_BASE_IMAGE, None
        if image_exists(LOCAL_BASE_TAG):
            return LOCAL_BASE_TAG, None
        if not base_image:
            echo(f"base: pulling {DEFAULT_BASE_IMAGE}")
            ok, err = try_pull(DEFAULT_BASE_IMAGE)
            if ok:
                return DEFAULT_BASE_IMAGE, None
            echo(f"base: cannot pull {DEFAULT_BASE_IMAGE} ({err}); making {LOCAL_BASE_TAG} with debootstrap")
    return LOCAL_BASE_TAG, make_base_image(LOCAL_BASE_TAG, mirror=mirror, echo=echo)


# --- the wheelhouse -----------------------------------------------------------------------------

def wheel_platforms(machine: str | None = None) -> list[str]:
    machine = machine or platform.machine()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return [f"{tag}_{machine}" for tag in MANYLINUX_TAGS]


def requirement_pins(requirements: Path) -> dict[str, str]:
    """name -> version of every `name==version` line; anything else is refused (the image is pinned)."""
    pins: dict[str, str] = {}
    for n, raw in enumerate(requirements.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)", line)
        if not m:
            raise ImageBuildError(f"{requirements}:{n}: {line!r} is not pinned as name==version")
        pins[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    if not pins:
        raise ImageBuildError(f"{requirements} lists no packages")
    return pins


def _file_digest(*paths: Path, extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for p in paths:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def build_wheelhouse(requirements: Path | None = None, dest_root: Path | None = None,
                     echo=_echo_default) -> Path:
    """Download the pinned wheels for CPython 3.11 manylinux once; returns the wheelhouse folder."""
    requirements = requirements or image_dir() / "requirements.txt"
    pins = requirement_pins(requirements)
    platforms = wheel_platforms()
    digest = _file_digest(requirements, extra=" ".join(platforms) + PYTHON_VERSION)[:16]
    dest_root = dest_root or cache_dir() / "wheelhouse"
    dest = dest_root / f"cp{PYTHON_VERSION.replace('.', '')}-{platforms[0].split('_', 1)[1]}-{digest}"
    marker = dest / ".complete"
    if marker.is_file():
        names = marker.read_text().split()
        if names and all((dest / n).is_file() for n in names):
            echo(f"wheelhouse: reusing {len(names)} wheels in {dest}")
            return dest
    dest_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="partial-", dir=dest_root))
    pyver = PYTHON_VERSION.replace(".", "")
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet",
           "--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation", "cp",
           "--abi", f"cp{pyver}"]
    for plat in platforms:
        cmd += ["--platform", plat]
    cmd += ["-r", str(requirements), "-d", str(tmp)]
    echo(f"wheelhouse: pip download {len(pins)} pinned packages for CPython {PYTHON_VERSION} "
         f"({platforms[-1]}) into {dest}")
    t0 = time.monotonic()
    res = _run(cmd, timeout=3600)
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        err = "\n".join((res.stderr or res.stdout).strip().splitlines()[-6:])
        raise ImageBuildError(f"pip download of the image's wheels failed (exit {res.returncode}); "
                              f"does this host reach PyPI (or its pip index)?\n{err}")
    wheels = sorted(p.name for p in tmp.glob("*.whl"))
    got = {re.sub(r"[-_.]+", "-", n.split("-", 1)[0]).lower() for n in wheels}
    missing = sorted(set(pins) - got)
    unpinned = sorted(got - set(pins))
    if missing or unpinned:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError(
            f"{requirements} is not a complete pin set: "
            + (f"no wheel for {', '.join(missing)}; " if missing else "")
            + (f"unpinned dependencies {', '.join(unpinned)} (pin them)" if unpinned else ""))
    (tmp / ".complete").write_text("\n".join(wheels) + "\n")
    if dest.exists():
        shutil.rmtree(dest, ignore_errors=True)
    try:
        tmp.rename(dest)
    except OSError:  # a concurrent build finished the same wheelhouse first
        shutil.rmtree(tmp, ignore_errors=True)
        if not (dest / ".complete").is_file():
            raise ImageBuildError(f"cannot move the wheelhouse into {dest}")
    echo(f"wheelhouse: {len(wheels)} wheels in {time.monotonic() - t0:.0f}s")
    return dest


# --- CA bundle and build context ----------------------------------------------------------------

def read_ca_bundle(path: str | os.PathLike) -> list[str]:
    """The PEM certificates of `path`; ImageBuildError when it is missing or holds none."""
    p = Path(path)
    if not p.is_file():
        raise ImageBuildError(f"--ca-bundle {p}: no such file")
    try:
        text = p.read_text(errors="strict")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImageBuildError(f"--ca-bundle {p}: cannot read it as PEM text ({exc})") from exc
    certs = [m.group(0) for m in _PEM_RE.finditer(text)]
    if not certs:
        raise ImageBuildError(f"--ca-bundle {p}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it")
    return certs


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def stage_context(wheelhouse: Path | None, ca_certs: list[str], dest: Path) -> Path:
    """A copy of image/ with the wheelhouse's wheels and the extra CA certificates in it."""
    src = image_dir()
    if not (src / "Dockerfile").is_file():
        raise ImageBuildError(f"{src / 'Dockerfile'} is missing: run from a checkout of the repository")
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("*.whl", "*.crt", "__pycache__"))
    (dest / "ca").mkdir(exist_ok=True)
    (dest / "wheelhouse").mkdir(exist_ok=True)
    for i, pem in enumerate(ca_certs):
        (dest / "ca" / f"extra-ca-{i:02d}.crt").write_text(pem.strip() + "\n")
    if wheelhouse is not None:
        for whl in sorted(wheelhouse.glob("*.whl")):
            _link_or_copy(whl, dest / "wheelhouse" / whl.name)
    return dest


def build_digest(context: Path, base_id: str) -> str:
    """Every file of the staged context but the wheels (which requirements.txt pins), and the base."""
    h = hashlib.sha256(base_id.encode())
    for p in sorted(context.rglob("*")):
        rel = p.relative_to(context)
        if p.is_file() and rel.parts[0] != "wheelhouse":
            h.update(rel.as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    online = not any((context / "wheelhouse").glob("*.whl"))
    h.update(f" online={online}".encode())
    return h.hexdigest()


# --- the build ----------------------------------------------------------------------------------

@dataclass
class BuildResult:
    tag: str
    base_image: str
    image_id: str
    size_bytes: int
    seconds: float
    reused: bool
    base_seconds: float | None = None

    def summary(self) -> str:
        what = "reused" if self.reused else f"built in {self.seconds:.0f}s"
        return (f"{self.tag} {what}: {self.image_id[:19]}, {self.size_bytes / 1e9:.2f} GB, "
                f"FROM {self.base_image}")


@contextlib.contextmanager
def _build_lock():
    """One base/wheelhouse maker at a time per checkout (parallel test sessions share .cache/)."""

    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / "image-build.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _buildx_available(cli: str) -> bool:
    return _run([cli, "buildx", "version"], timeout=20).returncode == 0


def build_image(tag: str = DEFAULT_TAG, base_image: str | None = None,
                ca_bundle: str | os.PathLike | None = None, no_cache: bool = False,
                reuse: bool = False, mirror: str | None = None, online_pip: bool = False,
                rebuild_base: bool = False, start_docker: bool = True,
                echo=_echo_default) -> BuildResult:
    """Build the sandbox image; with reuse=True an image built from the same inputs is kept as is."""
    t0 = time.monotonic()
    ca_certs = read_ca_bundle(ca_bundle) if ca_bundle else []
    if not (image_dir() / "Dockerfile").is_file():
        raise ImageBuildError(f"{image_dir() / 'Dockerfile'} is missing: run from a checkout of the repository")
    require_daemon(start=start_docker, echo=echo)
    cli = _docker()
    with _build_lock():
        base, base_seconds = resolve_base_image(base_image, mirror=mirror, rebuild=rebuild_base, echo=echo)
        wheelhouse = None if online_pip else build_wheelhouse(echo=echo)
    work = cache_dir() / "image-build"
    work.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="context-", dir=work))
    try:
        context = stage_context(wheelhouse, ca_certs, tmp / "image")
        digest = build_digest(context, image_id(base))
        if reuse and not no_cache and image_exists(tag) and image_label(tag, DIGEST_LABEL) == digest:
            echo(f"image: {tag} is up to date (build digest {digest[:12]}), reusing it")
            return BuildResult(tag, base, image_id(tag), image_size(tag), time.monotonic() - t0,
                               True, base_seconds)
        cmd = [cli, "build", "--tag", tag, "--build-arg", f"BASE_IMAGE={base}",
               "--build-arg", f"VA_BUILD_DIGEST={digest}"]
        if no_cache:
            cmd.append("--no-cache")
        cmd.append(str(context))
        env = dict(os.environ)
        if not _buildx_available(cli):
            env["DOCKER_BUILDKIT"] = "0"  # the classic builder: the buildx plugin is not installed
        echo(f"image: docker build --tag {tag} FROM {base}"
             + (" (pip offline from the wheelhouse)" if wheelhouse else " (pip from the network)")
             + (f", {len(ca_certs)} extra CA certificate(s)" if ca_certs else "")
             + (", no cache" if no_cache else ""))
        t_build = time.monotonic()
        res = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL)
        if res.returncode != 0:
            ok, reason = docker_host.ensure_docker(start=False)
            raise ImageBuildError(
                f"docker build failed (exit {res.returncode}); see the build output above"
                + ("" if ok else f" (Docker itself is not usable: {reason})"))
        result = BuildResult(tag, base, image_id(tag), image_size(tag), time.monotonic() - t_build,
                             False, base_seconds)
        echo(f"image: {size_report(tag)}")
        echo(f"image: {result.summary()}")
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- CLI ----------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="video-arena image", description="Build the Video-Arena sandbox image.")
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    b = sub.add_parser("build", help="build the sandbox image (making the base and wheelhouse if needed)")
    b.add_argument("--tag", default=DEFAULT_TAG, help="image tag (default: %(default)s)")
    b.add_argument("--base-image", default=None,
                   help=f"image to build FROM (default: {DEFAULT_BASE_IMAGE} if present or pullable, "
                        f"else {LOCAL_BASE_TAG} made with debootstrap)")
    b.add_argument("--ca-bundle", default=None, metavar="FILE",
                   help="PEM file of extra CA certificates to trust inside the image (TLS-intercepting proxies)")
    b.add_argument("--no-cache", action="store_true", help="docker build --no-cache")
    b.add_argument("--reuse", action="store_true",
                   help="keep an existing image built from the same Dockerfile, pins, CA and base")
    b.add_argument("--mirror", default=None, metavar="URL",
                   help="Debian mirror for debootstrap (default: the host's apt source)")
    b.add_argument("--online-pip", action="store_true",
                   help="no host wheelhouse: pip inside the build fetches from its index")
    b.add_argument("--runtime", choices=tuple(RUNTIMES), default="docker",
                   help="podman: also load the built image into Podman (docker save | podman load) for "
                        "harbor run -e podman (video_arena/container_host/runtimes.py)")
    b.add_argument("--rebuild-base", action="store_true",
                   help=f"make {LOCAL_BASE_TAG} again with debootstrap even if it exists")
    base = sub.add_parser("base", help=f"make the Debian base image with debootstrap ({LOCAL_BASE_TAG})")
    base.add_argument("--tag", default=LOCAL_BASE_TAG, help="image tag (default: %(default)s)")
    base.add_argument("--mirror", default=None, metavar="URL",
                      help="Debian mirror (default: the host's apt source)")
    base.add_argument("--force", action="store_true", help="make it even if the tag exists")
    sub.add_parser("wheelhouse", help="download the image's pinned wheels into .cache/wheelhouse")
    push = sub.add_parser("push", help="push the image to a registry; prints REGISTRY/NAME@sha256:... "
                                       "for make-harbor --base-image")
    push.add_argument("reference", metavar="REGISTRY/NAME[:TAG]", help="where to push (tag default: latest)")
    push.add_argument("--image", default=DEFAULT_TAG, help="the local image to push (default: %(default)s)")
    return p


def run_action(args: argparse.Namespace) -> int:
    """`video-arena image build|base|wheelhouse` (parsed by _parser(); the CLI is image_cli.main)."""
    try:
        if args.action == "wheelhouse":
            print(build_wheelhouse())
            return 0
        if args.action == "base":
            require_daemon()
            if image_exists(args.tag) and not args.force:
                print(f"base: {args.tag} exists (use --force to make it again)")
                return 0
            make_base_image(args.tag, mirror=args.mirror)
            return 0
        result = build_image(tag=args.tag, base_image=args.base_image, ca_bundle=args.ca_bundle,
                             no_cache=args.no_cache, reuse=args.reuse, mirror=args.mirror,
                             online_pip=args.online_pip, rebuild_base=args.rebuild_base)
    except ImageBuildError as exc:
        print(f"video-arena image: error: {exc}", file=sys.stderr)
        return 1
    print(result.summary())
    return 0

