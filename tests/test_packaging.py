"""A non-editable install carries everything `trainlint check` needs (package data included)
and works from another folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_install_runs_check_from_another_folder(tmp_path):
    wheels = tmp_path / "wheels"
    # build from a copy: a `build/` folder left in the checkout by an earlier build would put
    # modules that no longer exist into the wheel
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                                             "__pycache__", ".trainlint_cache", ".pytest_cache"))
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(src)],
        capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    (wheel,) = wheels.glob("trainlint-*.whl")
    site = tmp_path / "site"
    inst = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                          capture_output=True, text=True)
    assert inst.returncode == 0, inst.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c",
                          "import trainlint, sys; print(trainlint.__file__); "
                          "from trainlint.cli import main; sys.argv=['trainlint','check',sys.argv[1],'--gpu','A100',"
                          "'--format','json']; main()", str(ROOT / "examples")],
                         capture_output=True, text=True, cwd=elsewhere, env=env)
    assert out.stdout.splitlines()[0].startswith(str(site)), out.stdout[:200]
    assert out.returncode == 1, out.stderr
    found = json.loads("\n".join(out.stdout.splitlines()[1:]))
    assert {d["name"] for d in found} >= {"manual-device-placement", "padding-max-length", "fp16-on-bf16-hardware"}
    assert not [d for d in found if d["code"] == "TL000"]
