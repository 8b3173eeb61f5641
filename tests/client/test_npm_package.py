"""``web/`` as an npm package: what ``npm pack`` puts in it, an app that installs the tarball and
imports the client by name (ESM, no build step), and the pure modules under Node's own test runner."""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from ..waiting import HANG_S

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None, reason="npm is not installed (./scripts/test installs it)"
)


def run(command: list[str], cwd: Path) -> str:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=HANG_S, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_pure_modules_pass_under_nodes_test_runner() -> None:
    run(["node", "--test", "tests/client/node/"], ROOT)


def test_npm_pack_holds_the_client_and_its_types_and_an_app_imports_it_by_name(tmp_path: Path) -> None:
    packed = json.loads(run(["npm", "pack", "--json", "--pack-destination", str(tmp_path)], WEB))[0]
    files = {entry["path"] for entry in packed["files"]}
    assert {"package.json", "index.js", "index.d.ts", "client.js", "adapters/aggrid-viewport.js"} <= files
    assert all(name.endswith((".js", ".d.ts", ".json")) for name in files), files
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert (packed["name"], packed["version"]) == ("@sowpush/client", version), "one version for both"
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "private": true, "type": "module"}')
    run(["npm", "install", "--no-audit", "--no-fund", "--offline", str(tmp_path / packed["filename"])], app)
    script = (
        "import { PushClient, applyPatch } from '@sowpush/client';"
        "import { RowBatch } from '@sowpush/client/adapters/batch';"
        "console.log(typeof PushClient, typeof RowBatch, JSON.stringify(applyPatch({a: 1}, "
        "[{op: 'replace', path: '/a', value: 2}])));"
    )
    assert run(["node", "--input-type=module", "-e", script], app).split() == [
        "function",
        "function",
        '{"a":2}',
    ]
