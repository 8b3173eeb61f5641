"""Compiles the server's core (server/core) with mypyc into extension modules beside its sources.

    python scripts/compile_core.py           # builds when the sources changed since the last build
    python scripts/compile_core.py --clean   # removes the build: the core runs as pure Python

The compiled core runs the same code, typed, as C: the publish path and the fan-out take less CPU.
Without a C compiler, or when the build fails, this says why and exits 0: the server runs the
pure-Python core (server/core/native.py picks the one that matches the sources).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["SOWPUSH_PURE"] = "1"  # this process reads the sources, never a stale build

from server.core import native  # noqa: E402

GROUP = native.LIBRARY.removesuffix("__mypyc")
# The C sources, the objects and what the build printed (build.log): mypyc rewrites only the C
# files of modules that changed, and only those are compiled again (a build after one edit takes
# seconds).
WORK = ROOT / "build" / "core"


def built_files() -> list[Path]:
    """Every file a build leaves in the source tree."""
    found = [*native.CORE.rglob("*.so"), *native.CORE.parent.parent.glob(native.LIBRARY + ".*")]
    return found + ([native.STAMP] if native.STAMP.exists() else [])


def clean() -> None:
    for path in built_files():
        path.unlink()


def _parallel_compile(compiler: Any, jobs: int) -> None:
    """mypyc writes one C file per module (multi_file); compile them on every core, not one by one."""

    def compile_all(
        sources: list[str],
        output_dir: str | None = None,
        macros: Any = None,
        include_dirs: Any = None,
        debug: Any = 0,
        extra_preargs: Any = None,
        extra_postargs: Any = None,
        depends: Any = None,
    ) -> list[str]:
        macros, objects, extra, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs
        )
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def one(obj: str) -> None:
            src, ext = build[obj]
            compiler._compile(obj, src, ext, cc_args, extra, pp_opts)

        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(one, objects))
        return list(objects)

    compiler.compile = compile_all


def build(jobs: int) -> None:
    # Imported here: without mypyc or setuptools the build fails like any other, and says so.
    from mypyc.build import mypycify  # noqa: PLC0415
    from setuptools import Distribution  # noqa: PLC0415
    from setuptools.command.build_ext import build_ext  # noqa: PLC0415

    class ParallelBuildExt(build_ext):
        def build_extension(self, ext: Any) -> None:
            _parallel_compile(self.compiler, jobs)
            super().build_extension(ext)

    files = [str(path.relative_to(ROOT)) for path in native.sources()]
    digest = native.digest()
    os.chdir(ROOT)
    extensions = mypycify(files, opt_level="3", multi_file=True, group_name=GROUP, target_dir=str(WORK))
    distribution = Distribution({"name": "sowpush-core", "ext_modules": extensions})
    distribution.cmdclass["build_ext"] = ParallelBuildExt
    command = distribution.get_command_obj("build_ext")
    command.inplace = True
    # The modules' own small extensions (one each, importing the group's library) are built
    # beside the library, not one by one after it (115 of them took 9 s on one core).
    command.parallel = jobs
    command.build_temp = str(WORK)
    distribution.run_command("build_ext")
    library = native.library_path()
    assert library is not None, "the build made no library"
    native.STAMP.write_text(native.stamp_of(digest, library) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clean", action="store_true", help="remove the build")
    parser.add_argument("--force", action="store_true", help="build even when the stamp matches")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--here", action="store_true", help=argparse.SUPPRESS)  # the build itself
    arguments = parser.parse_args()
    if arguments.clean:
        clean()
        return 0
    if arguments.here:
        build(arguments.jobs)
        return 0
    if not arguments.force and native.build_state()[0]:
        return 0
    WORK.mkdir(parents=True, exist_ok=True)
    with (WORK / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two bootstraps at once: the second waits, then finds it built
        if not arguments.force and native.build_state()[0]:
            return 0
        return compile_once(arguments.jobs)


def compile_once(jobs: int) -> int:
    compiler = sysconfig.get_config_var("CC") or "cc"
    if shutil.which(compiler.split()[0]) is None:
        print(f"compile_core: no C compiler ({compiler}): the core runs as pure Python", file=sys.stderr)
        return 0
    print("compile_core: compiling server/core with mypyc (about a minute on two cores)", file=sys.stderr)
    started = time.monotonic()
    clean()
    log = WORK / "build.log"
    # In a process of its own, its compiler lines in build.log: a failed build must leave a
    # working pure core and say why in a few lines.
    with log.open("w") as output:
        command = [sys.executable, __file__, "--here", "--jobs", str(jobs)]
        result = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, check=False)
    if result.returncode != 0:
        clean()
        tail = log.read_text(errors="replace").splitlines()[-8:]
        print("\n".join(["compile_core: the build failed:", *tail]), file=sys.stderr)
        print(f"compile_core: the core runs as pure Python (the whole output: {log})", file=sys.stderr)
        return 0
    print(f"compile_core: built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
