"""The TypeScript declarations shipped beside the JavaScript client and its grid adapters
(web/*.d.ts, web/adapters/*.d.ts), checked by tsc.

Three checks, each able to fail on a wrong declaration:
- typed usage examples (typecheck/*.ts) compile against the
  declarations, which pin the types a user relies on and refuse what the client refuses;
- the JavaScript itself type-checks (strict, from its JSDoc), and the declarations tsc derives
  from it conform to the hand-written ones: every value a .d.ts declares exists in its module with
  a type that fits (for a class, its instances), and every value a module exports is declared.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ..waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"
MODULE_FOLDERS = [WEB, WEB / "adapters"]
TYPECHECK = Path(__file__).parent / "typecheck"
TSC = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "tsc"
COMPILER = ["--strict", "--target", "es2022", "--module", "es2022", "--lib", "es2022,dom"]

# For one module: its declared values that its implementation lacks or does not fit, and its
# exported values that no declaration names. For a class, instances are compared (the
# constructors are internal: views are made by the client).
CONFORMANCE = """
import type * as Declared{n} from "./declared/{name}.js";
import type * as Implemented{n} from "./generated/{name}.js";
type Misfits{n} = {{
  [K in keyof typeof Declared{n}]: K extends keyof typeof Implemented{n}
    ? Fits<(typeof Implemented{n})[K], (typeof Declared{n})[K]> extends true ? never : K
    : K;
}}[keyof typeof Declared{n}];
type Undeclared{n} = Exclude<keyof typeof Implemented{n}, keyof typeof Declared{n}>;
export const {ident}_declarations_fit: [Misfits{n}] extends [never] ? true : Misfits{n} = true;
export const {ident}_exports_are_declared: [Undeclared{n}] extends [never] ? true : Undeclared{n} = true;
"""
FITS = """
type Fits<I, D> = D extends abstract new (...args: any) => infer DI
  ? I extends abstract new (...args: any) => infer II ? (II extends DI ? true : false) : false
  : I extends D ? true : false;
"""


def tsc(*arguments: str, cwd: Path, source: str = "") -> None:
    """Run tsc; on failure the message holds its errors (and the lines of `source` they name)."""
    if not TSC.exists():
        pytest.fail(f"TypeScript is not installed ({TSC} is missing): run ./scripts/test, which installs it")
    if shutil.which("node") is None:
        pytest.fail("Node.js is not installed (tsc runs on it): run ./scripts/test, which installs it")
    command = [str(TSC), *arguments]
    result = subprocess.run(command, check=False, cwd=cwd, capture_output=True, text=True, timeout=3 * HANG_S)
    if result.returncode == 0:
        return
    lines = source.splitlines()
    named = [int(n) for n in re.findall(r"^conformance\.ts\((\d+),", result.stdout, re.MULTILINE)]
    misfits = "".join(f"\n  {lines[n - 1].strip()}" for n in named if source)
    pytest.fail(f"tsc {' '.join(arguments)}\n{result.stdout}{result.stderr}{misfits}")


def copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, target)


def test_the_typed_usage_example_compiles_against_the_declarations() -> None:
    tsc("-p", str(TYPECHECK / "tsconfig.json"), cwd=ROOT)


def test_the_javascript_type_checks_and_fits_its_declarations(tmp_path: Path) -> None:
    implementation = tmp_path / "implementation"
    declared = tmp_path / "declared"
    # Each module alone, in its folder: beside its .d.ts, tsc would read the .d.ts instead.
    for module in MODULE_FOLDERS:
        for source in module.glob("*.js"):
            copy(source, implementation / source.relative_to(WEB))
    declarations = [path for folder in MODULE_FOLDERS for path in folder.glob("*.d.ts")]
    modules = sorted(str(path.relative_to(WEB)).removesuffix(".d.ts") for path in declarations)
    assert {"index", "adapters/aggrid"} <= set(modules)
    for name in modules:
        assert (WEB / f"{name}.js").exists(), f"web/{name}.d.ts declares a module that does not exist"
        copy(WEB / f"{name}.d.ts", declared / f"{name}.d.ts")

    sources = sorted(str(path.relative_to(implementation)) for path in implementation.rglob("*.js"))
    emit = ["--allowJs", "--checkJs", "--declaration", "--emitDeclarationOnly", "--outDir", "../generated"]
    tsc(*COMPILER, *emit, "--rootDir", ".", *sources, cwd=implementation)

    checks = [FITS] + [
        CONFORMANCE.format(n=n, name=name, ident=re.sub(r"\W", "_", name)) for n, name in enumerate(modules)
    ]
    conformance = "\n".join(checks)
    (tmp_path / "conformance.ts").write_text(conformance)
    check = ["--noEmit", "--moduleResolution", "bundler", "conformance.ts"]
    tsc(*COMPILER, *check, cwd=tmp_path, source=conformance)
