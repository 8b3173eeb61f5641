"""Which core runs (server/core/native.py): the compiled one only when it was built from the
sources as they are, and otherwise the sources themselves, never a stale build."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from server.core import native

ROOT = Path(__file__).resolve().parent.parent
SHOW = "import server.core.engine as e, server.core.native as n; print(e.__file__); print(n.describe())"
built = pytest.mark.skipif(not native.COMPILED, reason="the core is not compiled here")


def core_of(root: Path, code: str = SHOW, **env: str) -> list[str]:
    environment = {key: value for key, value in os.environ.items() if key != "SOWPUSH_PURE"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env={**environment, "PYTHONPATH": str(root), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.splitlines()


def copy_of_server(root: Path) -> None:
    shutil.copytree(ROOT / "server", root / "server", ignore=shutil.ignore_patterns("__pycache__"))


def test_sowpush_pure_runs_the_sources() -> None:
    engine, line = core_of(ROOT, SOWPUSH_PURE="1")
    assert engine.endswith("engine.py")
    assert line == "core: pure Python (SOWPUSH_PURE is set)"


@built
def test_a_build_of_the_sources_as_they_are_runs_compiled() -> None:
    engine, line = core_of(ROOT)
    assert not engine.endswith(".py")
    assert line == "core: compiled (mypyc)"


@built
def test_a_source_edited_after_the_build_runs_as_edited(tmp_path: Path) -> None:
    copy_of_server(tmp_path)
    for library in ROOT.glob(native.LIBRARY + ".*"):
        shutil.copy(library, tmp_path)
    assert core_of(tmp_path)[1] == "core: compiled (mypyc)", "the copy runs compiled before the edit"
    with (tmp_path / "server" / "core" / "engine.py").open("a") as source:
        source.write("\nEDITED = True\n")
    engine, line, edited = core_of(tmp_path, SHOW + "; print(getattr(e, 'EDITED', False))")
    assert engine.endswith("engine.py") and edited == "True"
    assert line.startswith("core: pure Python (the sources changed since the last build")


@built
def test_a_copy_of_server_without_the_builds_library_runs_the_sources(tmp_path: Path) -> None:
    """A deployment that copies server/ alone: the library beside it is missing (and another
    tree's, found on the path, is not this build's), so the sources run."""
    copy_of_server(tmp_path)
    engine, line = core_of(tmp_path, PYTHONSAFEPATH="1")
    assert engine.endswith("engine.py")
    assert line.startswith(f"core: pure Python ({native.LIBRARY} is not beside server/")
