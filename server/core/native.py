"""Whether the core runs compiled, and the guard that keeps a stale build from running.

``scripts/compile_core.py`` compiles the core's modules with mypyc into extension modules beside
their sources, and writes into ``native.stamp`` the digest of the sources it compiled and the
size and time of the library it made. Python imports an extension module before a source file of
the same name, so an edit to a source after a build would silently not run. So this module, which
is never compiled (nor the package's ``__init__``), loads the extension modules only when the
stamp matches the sources and the library as they are now; otherwise, or when ``SOWPUSH_PURE=1``
is set, every module of the core is imported from its source. The server logs which it runs
(``core: compiled (mypyc)`` or ``core: pure Python (why)``).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

CORE = Path(__file__).resolve().parent
STAMP = CORE / "native.stamp"
PACKAGE = __name__.rpartition(".")[0]
# The extension module that holds the compiled code of every module of the build. mypyc puts it
# at the top of the source tree, beside server/, and the modules' own extension modules import it
# by this name (a package's __path__ is worked out from where it is).
LIBRARY = "sowpush_core__mypyc"
# The modules that stay Python in every build: this guard, and the package that runs it first.
NEVER_COMPILED = frozenset({"__init__.py", "native.py"})


def sources() -> list[Path]:
    """The core's modules that a build compiles, in a stable order."""
    return sorted(
        path for path in CORE.rglob("*.py") if not (path.parent == CORE and path.name in NEVER_COMPILED)
    )


def digest() -> str:
    """What a build was made from: every compiled module's path and text."""
    hasher = hashlib.sha256()
    for path in sources():
        hasher.update(path.relative_to(CORE).as_posix().encode())
        hasher.update(b"\0")
        hasher.update(path.read_bytes())
        hasher.update(b"\0")
    return hasher.hexdigest()


class _SourcesOnly(importlib.abc.MetaPathFinder):
    """Finds the core's modules among source files only, never among extension modules."""

    def __init__(self) -> None:
        self._finders: dict[str, importlib.machinery.FileFinder] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(PACKAGE + ".") or path is None:
            return None
        for entry in path:
            finder = self._finders.get(entry)
            if finder is None:
                finder = importlib.machinery.FileFinder(
                    entry,
                    (importlib.machinery.SourceFileLoader, importlib.machinery.SOURCE_SUFFIXES),
                    (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
                )
                self._finders[entry] = finder
            spec = finder.find_spec(fullname, target)
            if spec is not None and spec.loader is not None:  # no loader: a folder without __init__.py
                return spec
        # Never None: the next finder would load a module whose source is gone from a build left
        # behind, and that one the compiled versions of every other module.
        raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


def _choose() -> tuple[bool, str]:
    if os.environ.get("SOWPUSH_PURE", "") not in ("", "0"):
        return False, "SOWPUSH_PURE is set"
    return build_state()


def library_path() -> Path | None:
    """The build's library beside this server/, if there is one."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = CORE.parent.parent / (LIBRARY + suffix)
        if path.exists():
            return path
    return None


def stamp_of(sources_digest: str, library: Path) -> str:
    """What a build writes into the stamp: the sources it compiled, and the library it made
    (another build's library beside these modules would run other code)."""
    status = library.stat()
    return f"{sources_digest} {status.st_size} {status.st_mtime_ns}"


def build_state() -> tuple[bool, str]:
    """Whether a build of the sources as they are now is in place, and if not, why."""
    library = library_path()
    if not STAMP.exists():
        return False, "not compiled: python scripts/compile_core.py compiles it"
    if library is None:
        return False, f"the build's {LIBRARY} is not beside server/: python scripts/compile_core.py"
    if STAMP.read_text().strip() != stamp_of(digest(), library):
        return False, "the sources or the build changed since the last build: python scripts/compile_core.py"
    return True, "compiled"


def _load_library() -> tuple[bool, str]:
    """Loads this tree's library by its path, whatever the working directory or the path: the
    modules' extension modules then find it among the loaded modules, and never another tree's."""
    library = library_path()
    assert library is not None
    loaded = sys.modules.get(LIBRARY)
    if loaded is not None:
        same = Path(getattr(loaded, "__file__", "") or "").resolve() == library.resolve()
        return (True, "compiled") if same else (False, f"another tree's {LIBRARY} is loaded already")
    spec = importlib.util.spec_from_file_location(LIBRARY, library)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[LIBRARY] = module
    spec.loader.exec_module(module)
    return True, "compiled"


COMPILED, HOW = _choose()
if COMPILED:
    COMPILED, HOW = _load_library()
# A class compared by name: a reload of this module must not add a second finder.
if not COMPILED and not any(type(finder).__name__ == _SourcesOnly.__name__ for finder in sys.meta_path):
    sys.meta_path.insert(0, _SourcesOnly())


def running_compiled() -> bool:
    """Whether the core's modules imported so far are the compiled ones."""
    return any(
        (getattr(module, "__file__", None) or "").endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
        for name, module in list(sys.modules.items())
        if name.startswith(PACKAGE + ".")
    )


def describe() -> str:
    """The line the server logs as it starts."""
    if running_compiled():
        return "core: compiled (mypyc)"
    return f"core: pure Python ({'no extension module found' if COMPILED else HOW})"
