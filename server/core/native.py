"""Whether the core runs compiled, and the guard that keeps a stale build from running.

``scripts/compile_core.py`` compiles the core's modules with mypyc into extension modules beside
their sources, and writes the digest of the sources it compiled into ``native.stamp``. Python
imports an extension module before a source file of the same name, so an edit to a source after a
build would silently not run. So this module, which is never compiled (nor the package's
``__init__``), loads the extension modules only when the stamp matches the sources as they are
now; otherwise, or when ``SOWPUSH_PURE=1`` is set, every module of the core is imported from its
source. The server logs which it runs (``core: compiled`` or ``core: pure Python (why)``).
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
            if spec is not None:
                return spec
        return None


def _choose() -> tuple[bool, str]:
    if os.environ.get("SOWPUSH_PURE", "") not in ("", "0"):
        return False, "SOWPUSH_PURE is set"
    return build_state()


def build_state() -> tuple[bool, str]:
    """Whether a build of the sources as they are now is in place, and if not, why."""
    if not STAMP.exists():
        return False, "not compiled: python scripts/compile_core.py compiles it"
    if STAMP.read_text().strip() != digest():
        return False, "the sources changed since the last build: python scripts/compile_core.py"
    # Another tree's library (an installed checkout's, say) would run other code than these sources.
    library = importlib.util.find_spec(LIBRARY)
    if library is None or library.origin is None or Path(library.origin).parent != CORE.parent.parent:
        return False, f"{LIBRARY} is not beside server/: python scripts/compile_core.py --force"
    return True, "compiled"


COMPILED, HOW = _choose()
if not COMPILED and not any(isinstance(finder, _SourcesOnly) for finder in sys.meta_path):
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
