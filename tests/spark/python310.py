"""A CPython 3.10 environment laid out like the demo feed's image (docker/feed.Dockerfile: the
apache/spark image's Python 3.10, the packages its ``pip install`` line names, and only the files
it copies), so the feed can be imported and run under the Python it meets in the cluster.

Where CPython 3.10 comes from, first found wins: ``$SOWPUSH_PYTHON310``; ``python3.10`` on the
PATH; a pyenv install (``$PYENV_ROOT/versions/3.10.*``); one that ``uv`` knows; and last
``uv python install 3.10`` (uv from PyPI, installed into this venv when missing), which downloads
a python-build-standalone build and so works only where that download is reachable.

    python -m tests.spark.python310      prints the interpreter, or why there is none
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from ..waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "docker" / "feed.Dockerfile"
ENV_DIR = ROOT / ".venv" / "feed-py310"  # beside the project's venv, ignored with it


class Unavailable(Exception):
    """No CPython 3.10 could be found or installed; the message says what was tried."""


def _capture(command: list[str], timeout: float = HANG_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout)


def is_python310(path: str | Path) -> bool:
    probe = "import sys, platform; print(platform.python_implementation(), sys.version_info[:2])"
    try:
        out = _capture([str(path), "-c", probe], timeout=HANG_S)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == "CPython (3, 10)"


def _pyenv_candidates() -> list[Path]:
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found = sorted(root.glob("versions/3.10*/bin/python3.10"), key=lambda p: p.parts[-3], reverse=True)
    return [p for p in found if "-" not in p.parts[-3]]  # 3.10.13, not 3.10-dev or miniconda3-...


def _uv() -> str:
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(uv).exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "uv"], check=True, timeout=5 * HANG_S
        )
    return uv


def _uv_python(uv: str) -> str | None:
    found = _capture([uv, "python", "find", "3.10"])
    path = found.stdout.strip()
    return path if found.returncode == 0 and is_python310(path) else None


def find_python310() -> str:
    """The path of a CPython 3.10 interpreter; raises Unavailable saying what was tried."""
    tried: list[str] = []
    explicit = os.environ.get("SOWPUSH_PYTHON310")
    candidates = [explicit] if explicit else []
    candidates += [shutil.which("python3.10") or ""] + [str(p) for p in _pyenv_candidates()]
    for candidate in filter(None, candidates):
        if is_python310(candidate):
            return candidate
        tried.append(candidate)
    try:
        uv = _uv()
        found = _uv_python(uv)
        if found is None:
            installed = _capture([uv, "python", "install", "3.10"], timeout=5 * HANG_S)
            found = _uv_python(uv)
            if found is None:
                last = (installed.stderr.strip().splitlines() or ["no output"])[-1]
                tried.append(f"uv python install 3.10 ({last.strip()})")
        if found is not None:
            return found
    except (OSError, subprocess.SubprocessError) as error:
        tried.append(f"uv ({error})")
    raise Unavailable("no CPython 3.10: tried " + "; ".join(tried or ["nothing"]))


def feed_requirements() -> list[str]:
    """The requirements of the image's ``pip install`` line, as written there."""
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("RUN pip install"):
            return [word for word in shlex.split(line)[3:] if not word.startswith("-")]
    raise AssertionError("docker/feed.Dockerfile installs no packages with pip")


def feed_copies() -> list[tuple[str, str]]:
    """The image's ``COPY source destination`` lines."""
    copies = []
    for line in DOCKERFILE.read_text().splitlines():
        match = re.fullmatch(r"COPY\s+(\S+)\s+(\S+)\s*", line)
        if match:
            copies.append((match.group(1), match.group(2)))
    return copies


def feed_environment() -> Path:
    """A venv on CPython 3.10 with the image's pip packages, and this venv's pyspark and py4j (pure
    Python) linked in; built once, and again when the requirements change. Returns its python."""
    python = ENV_DIR / "bin" / "python"
    here = Path(sysconfig.get_paths()["purelib"])
    stamp_text = "\n".join([*feed_requirements(), str(here)])
    stamp = ENV_DIR / f".built-{hashlib.sha256(stamp_text.encode()).hexdigest()[:16]}"
    if stamp.exists() and is_python310(python):
        return python
    base = find_python310()
    shutil.rmtree(ENV_DIR, ignore_errors=True)
    subprocess.run([base, "-m", "venv", str(ENV_DIR)], check=True, timeout=3 * HANG_S)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *feed_requirements()],
        check=True,
        timeout=5 * HANG_S,
    )
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    for package in ("pyspark", "py4j"):
        (site / package).symlink_to(here / package, target_is_directory=True)
    stamp.write_text(stamp_text)
    return python


def image_layout(app: Path) -> Path:
    """The image's /app: only what the Dockerfile copies, at the same places."""
    for source, destination in feed_copies():
        target = app / Path(destination).relative_to("/app")
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / source, target)
    return app


if __name__ == "__main__":
    try:
        print(find_python310())
    except Unavailable as error:
        raise SystemExit(str(error)) from None
