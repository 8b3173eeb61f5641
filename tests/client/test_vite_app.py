"""The example app in ``web/examples/vite-app/`` bundled by Vite from the packed npm package, as an
app's build does it: the client's code ends up in the bundle, imported by name, no build step of
its own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .test_npm_package import ROOT, WEB, run

VITE = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "vite"

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None or not VITE.exists(),
    reason="npm or Vite is missing (./scripts/test installs them)",
)


def test_vite_bundles_the_example_app_from_the_packed_client(tmp_path: Path) -> None:
    packed = json.loads(run(["npm", "pack", "--json", "--pack-destination", str(tmp_path)], WEB))[0]
    app = tmp_path / "app"
    shutil.copytree(WEB / "examples" / "vite-app", app)
    manifest = json.loads((app / "package.json").read_text())
    assert manifest["dependencies"] == {"@sowpush/client": "file:../.."}, "the example installs the checkout"
    manifest["dependencies"] = {"@sowpush/client": f"file:{tmp_path / packed['filename']}"}
    manifest.pop("devDependencies")  # (Vite is the suite's, in .venv/node)
    (app / "package.json").write_text(json.dumps(manifest))
    run(["npm", "install", "--offline", "--no-audit", "--no-fund"], app)
    run([str(VITE), "build", "--logLevel", "warn"], app)
    html = (app / "dist" / "index.html").read_text()
    [bundle] = (app / "dist" / "assets").glob("*.js")
    assert f"/assets/{bundle.name}" in html
    code = bundle.read_text()
    assert "sow_and_subscribe" in code and "@sowpush/client" not in code, "the client is in the bundle"
