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

from .waiting import HANG_S

ROOT = Path(__file__).resolve().parent.parent
SHOW = "import server.core.engine as e, server.core.native as n; print(e.__file__); print(n.describe())"
built = pytest.mark.skipif(not native.COMPILED, reason="the core is not compiled here")


def core_of(root: Path, code: str = SHOW, cwd: Path | None = None, **env: str) -> list[str]:
    environment = {key: value for key, value in os.environ.items() if key != "SOWPUSH_PURE"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd or root,
        env={**environment, "PYTHONPATH": str(root), **env},
        capture_output=True,
        text=True,
        timeout=HANG_S,
        check=True,
    )
    return result.stdout.splitlines()


def copy_of_server(root: Path) -> None:
    shutil.copytree(ROOT / "server", root / "server", ignore=shutil.ignore_patterns("__pycache__"))


def copy_of_build(root: Path) -> None:
    """A copy of server/ and of the build's library beside it (their times kept, as cp -p does)."""
    copy_of_server(root)
    for library in ROOT.glob(native.LIBRARY + ".*"):
        shutil.copy2(library, root)
    assert core_of(root)[1] == "core: compiled (mypyc)", "the copy runs compiled"


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
    copy_of_build(tmp_path)
    with (tmp_path / "server" / "core" / "engine.py").open("a") as source:
        source.write("\nEDITED = True\n")
    engine, line, edited = core_of(tmp_path, SHOW + "; print(getattr(e, 'EDITED', False))")
    assert engine.endswith("engine.py") and edited == "True"
    assert line.startswith("core: pure Python (the sources or the build changed since the last build")


@built
def test_a_copy_of_server_without_the_builds_library_runs_the_sources(tmp_path: Path) -> None:
    """A deployment that copies server/ alone: the library beside it is missing (and another
    tree's, found on the path, is not this build's), so the sources run."""
    copy_of_server(tmp_path)
    engine, line = core_of(tmp_path, PYTHONSAFEPATH="1")
    assert engine.endswith("engine.py")
    assert line.startswith(f"core: pure Python (the build's {native.LIBRARY} is not beside server/")


@built
def test_a_module_whose_source_is_gone_is_not_loaded_from_the_build(tmp_path: Path) -> None:
    """The module's extension module is left behind (builds are not in git): loading it would
    load the compiled versions of the others, edited ones included."""
    copy_of_build(tmp_path)
    (tmp_path / "server" / "core" / "limits.py").unlink()
    with (tmp_path / "server" / "core" / "errors.py").open("a") as source:
        source.write("\nEDITED = True\n")
    code = "import server.core.errors as e; print(e.__file__, getattr(e, 'EDITED', False))"
    code += "; import server.core.limits"
    with pytest.raises(subprocess.CalledProcessError) as failed:
        core_of(tmp_path, code)
    assert failed.value.stdout.split() == [str(tmp_path / "server" / "core" / "errors.py"), "True"]
    assert "ModuleNotFoundError: No module named 'server.core.limits'" in failed.value.stderr


@built
def test_the_build_runs_from_any_working_directory_and_through_a_link(tmp_path: Path) -> None:
    assert core_of(ROOT, cwd=tmp_path)[1] == "core: compiled (mypyc)"
    (tmp_path / "link").symlink_to(ROOT)
    assert core_of(tmp_path / "link", cwd=tmp_path)[1] == "core: compiled (mypyc)"


@built
def test_another_builds_library_beside_the_modules_is_not_run(tmp_path: Path) -> None:
    copy_of_build(tmp_path)
    library = next(tmp_path.glob(native.LIBRARY + ".*"))
    os.utime(library, ns=(library.stat().st_atime_ns, library.stat().st_mtime_ns + 1))
    engine, line = core_of(tmp_path)
    assert engine.endswith("engine.py")
    assert line.startswith("core: pure Python (the sources or the build changed since the last build")
