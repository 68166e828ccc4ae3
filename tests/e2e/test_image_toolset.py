"""Every tool the seed promises in the sandbox image does a real small job, as the agent user, with
no network (one test per tool, named by it). Also: nothing in the image links a library that is
not there (the image leaves some packages' files out, see image/dpkg.cfg), and every module
the agent imports has bytecode it can use (site-packages is not writable by the agent, so a
missing or stale .pyc would be recompiled at every import).

Set VA_IMAGE_TAG to check a candidate image instead of `video-arena/base:latest`.
"""
from __future__ import annotations

import shlex
import subprocess
import textwrap
from fnmatch import fnmatch

import pytest
from test_image import _exec, container  # noqa: F401  (the shared long-lived sandbox container)

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(3600)]

WORK = "/app/toolset"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
WORDS = "VIDEO ARENA 2024"


def _run_job(container: str, tool: str, script: str, timeout: float = 300) -> str:
    res = _exec(container, f"set -e; mkdir -p {WORK}; cd {WORK}; {script}", timeout=timeout)
    assert res.returncode == 0, (f"{tool} does not work in the image (exit {res.returncode}):\n"
                                 f"$ {script}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    return res.stdout


@pytest.fixture(scope="module")
def work(container):  # noqa: F811
    """A 3 s test clip (30 frames) and a picture of WORDS, made with the image's own ffmpeg."""
    _run_job(container, "ffmpeg (making the fixtures)", textwrap.dedent(f"""
        ffmpeg -nostdin -loglevel error -f lavfi -i testsrc=size=320x240:rate=10 -t 3 \
            -pix_fmt yuv420p -c:v libx264 clip.mp4
        ffmpeg -nostdin -loglevel error -f lavfi -i color=white:size=900x160 -frames:v 1 \
            -vf "drawtext=fontfile={FONT}:text='{WORDS}':fontsize=64:fontcolor=black:x=30:y=45" words.png
    """), timeout=180)
    return container


def _python(code: str) -> str:
    return f"python3 -c {shlex.quote(textwrap.dedent(code))}"


# tool -> (a shell job run in WORK as the agent, text its output must contain)
JOBS: dict[str, tuple[str, str]] = {
    "ffmpeg": ("ffmpeg -nostdin -loglevel error -ss 1 -i clip.mp4 -frames:v 1 still.png && "
               "ffmpeg -nostdin -i clip.mp4 -map 0:v -f null - 2>&1 | grep -o 'frame= *[0-9]*' | tail -1",
               "frame=   30"),
    "ffprobe": ("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                "stream=codec_name,width,height,nb_read_frames -of csv=p=0 clip.mp4", "h264,320,240,30"),
    "tesseract": ("tesseract words.png - -l eng 2>/dev/null", WORDS),
    "python3": (_python("""
        import sys, json, sqlite3
        assert sys.version_info[:2] == (3, 11), sys.version
        db = sqlite3.connect(":memory:"); db.execute("create table t (x)"); db.execute("insert into t values (41)")
        print(json.dumps({"py": "%d.%d" % sys.version_info[:2], "x": db.execute("select x + 1 from t").fetchone()[0]}))
        """), '{"py": "3.11", "x": 42}'),
    "numpy": (_python("""
        import numpy as np
        x = np.linalg.solve(np.array([[3.0, 1.0], [1.0, 2.0]]), np.array([9.0, 8.0]))
        print("numpy", np.round(x, 6).tolist())
        """), "numpy [2.0, 3.0]"),
    "scipy": (_python("""
        import numpy as np, scipy.optimize, scipy.ndimage, scipy.signal
        root = scipy.optimize.brentq(lambda v: v * v - 2, 0, 2)
        peaks, _ = scipy.signal.find_peaks(np.array([0, 3, 0, 5, 0]))
        blurred = scipy.ndimage.gaussian_filter(np.eye(8), 1)
        print("scipy %.6f %s %s" % (root, peaks.tolist(), blurred.shape))
        """), "scipy 1.414214 [1, 3] (8, 8)"),
    "pandas": (_python("""
        import io, pandas as pd
        df = pd.read_csv(io.StringIO("game,t\\nchess,1\\nchess,4\\ngo,2\\n"))
        print("pandas", df.groupby("game")["t"].sum().to_dict())
        """), "pandas {'chess': 5, 'go': 2}"),
    "Pillow": (_python("""
        from PIL import Image
        im = Image.open("still.png").convert("RGB").resize((160, 120))
        im.save("still.jpg", quality=90)
        print("Pillow", Image.open("still.jpg").size, Image.open("still.jpg").format)
        """), "Pillow (160, 120) JPEG"),
    "OpenCV": (_python("""
        import cv2
        cap = cv2.VideoCapture("clip.mp4")
        n, frame = 0, None
        while True:
            ok, f = cap.read()
            if not ok:
                break
            n, frame = n + 1, f
        edges = cv2.Canny(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), 50, 150)
        assert cv2.imwrite("edges.png", edges) and edges.any()
        headless = "GUI:                           NONE" in cv2.getBuildInformation()
        print("OpenCV", n, frame.shape, "headless" if headless else "HAS A GUI")
        """), "OpenCV 30 (240, 320, 3) headless"),
    "scikit-image": (_python("""
        import skimage.io, skimage.color, skimage.filters, skimage.measure
        gray = skimage.color.rgb2gray(skimage.io.imread("still.png")[..., :3])
        labels = skimage.measure.label(skimage.filters.sobel(gray) > 0.1)
        print("scikit-image", gray.shape, labels.max() > 0)
        """), "scikit-image (240, 320) True"),
    "imageio": (_python("""
        import imageio.v3 as iio
        frame = iio.imread("clip.mp4", index=0)
        iio.imwrite("first.png", frame)
        print("imageio", frame.shape, iio.imread("first.png").shape)
        """), "imageio (240, 320, 3) (240, 320, 3)"),
    "PyAV": (_python("""
        import av
        with av.open("clip.mp4") as c:
            s = c.streams.video[0]
            n = sum(1 for _ in c.decode(s))
            print("PyAV", n, s.codec_context.name, float(s.average_rate))
        """), "PyAV 30 h264 10.0"),
    "matplotlib": (_python("""
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.plot([0, 1, 2], [2, 0, 1]); ax.set_title("video arena")
        fig.savefig("plot.png")
        print("matplotlib", plt.get_backend())
        """) + " && file -b plot.png", "PNG image data"),
    "pytesseract": (_python("""
        import pytesseract
        from PIL import Image
        print("pytesseract", pytesseract.image_to_string(Image.open("words.png")).strip())
        """), "pytesseract " + WORDS),
    "tqdm": (_python("""
        import sys
        from tqdm import tqdm
        total = sum(tqdm(range(100), file=sys.stdout, ascii=True, mininterval=0))
        print("\\ntqdm", total)
        """), "tqdm 4950"),
    "tmux": ("tmux new-session -d -s va 'echo from-tmux > tmux.txt; sleep 30' && "
             "for i in $(seq 50); do test -s tmux.txt && break; sleep 0.1; done; "
             "tmux has-session -t va && tmux kill-server && cat tmux.txt", "from-tmux"),
    "jq": ("""echo '{"events": [{"t": 1.5}, {"t": 2}]}' | jq -c '[.events[].t] | add'""", "3.5"),
    "bc": ("echo 'scale=4; 22/7' | bc -l", "3.1428"),
    "file": ("file -b clip.mp4 still.png", "ISO Media"),
    "less": ("printf 'line one\\nline two\\n' > lines.txt && less -F lines.txt | tail -1", "line two"),
    "vim": ("printf 'hello world\\n' > v.txt && vim -Nu NONE -Es -c '%s/world/arena/' -c 'wq' v.txt && cat v.txt",
            "hello arena"),
    "bash": ("bash -c 'a=(1 2 3); declare -A m=([k]=v); echo \"bash ${#a[@]} ${m[k]} $((6*7))\"'", "bash 3 v 42"),
}


# the jobs that read the clip or the picture the `work` fixture makes with ffmpeg
NEEDS_MEDIA = {"ffmpeg", "ffprobe", "tesseract", "Pillow", "OpenCV", "scikit-image", "imageio", "PyAV",
               "pytesseract", "file"}


@pytest.mark.parametrize("tool", list(JOBS))
def test_tool_does_a_real_job_as_the_agent(container, request, tool):  # noqa: F811
    if tool in NEEDS_MEDIA:
        request.getfixturevalue("work")
    script, expected = JOBS[tool]
    out = _run_job(container, tool, script)
    assert expected in out, f"{tool}: expected {expected!r} in its output, got:\n{out[-2000:]}"


def test_toolset_runs_as_the_unprivileged_agent(container):  # noqa: F811
    assert _exec(container, "id -un").stdout.strip() == "agent"


# (ELF file, library) pairs already unresolved in the unmodified Debian/PyPI packages: libcaca's
# optional GL plugin (freeglut is not installed; nothing loads the plugin), and scipy's bundled
# libgfortran, which finds its libquadmath by the soname scipy has loaded before it.
KNOWN_UNRESOLVED = [("/usr/lib/*/caca/libgl_plugin.so*", "libGLU.so.1"),
                    ("/usr/lib/*/caca/libgl_plugin.so*", "libglut.so.*"),
                    ("/usr/local/lib/python3.11/dist-packages/scipy.libs/libgfortran-*", "libquadmath-*")]
_LDD_SCAN = r"""
find /usr/bin /usr/sbin /usr/lib /usr/local -type f \( -perm -u+x -o -name '*.so*' \) -size +1k 2>/dev/null |
while read -r f; do
    [ "$(head -c4 "$f" | tail -c3)" = ELF ] || continue
    ldd "$f" 2>/dev/null | awk -v f="$f" '/=> not found/ {print f, $1}'
done
"""


def test_no_file_of_the_image_links_a_missing_library(container):  # noqa: F811
    res = _exec(container, _LDD_SCAN, user="root", timeout=600)
    assert res.returncode == 0, res.stderr
    pairs = [tuple(line.rsplit(" ", 1)) for line in res.stdout.splitlines() if line.strip()]
    unexpected = [f"{path}: {lib}" for path, lib in pairs
                  if not any(fnmatch(path, p) and fnmatch(lib, lp) for p, lp in KNOWN_UNRESOLVED)]
    assert not unexpected, "ELF files of the image link libraries it does not hold:\n" + "\n".join(unexpected)


def test_agent_imports_use_the_images_bytecode(sandbox_image):
    """Imports as root in a fresh container write no new .pyc: every one the agent needs is there
    and current (the agent cannot write site-packages, so it would recompile at each import)."""
    script = ("touch /tmp/mark && sleep 1 && python3 -c 'import numpy, scipy, scipy.ndimage, scipy.signal, "
              "scipy.optimize, pandas, PIL.Image, cv2, skimage, skimage.io, skimage.filters, imageio.v3, av, "
              "matplotlib.pyplot, pytesseract, tqdm' && find / -xdev -name '*.pyc' -newer /tmp/mark")
    res = subprocess.run(["docker", "run", "--rm", "--network", "none", "--user", "root", sandbox_image,
                          "bash", "-c", script], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [], f"modules without current bytecode in the image: {res.stdout.split()[:20]}"
