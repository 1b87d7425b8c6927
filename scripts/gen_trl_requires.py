"""Generate trainlint/knowledge/data/trl_requires.json: the transformers version range each TRL
release requires, from the ``Requires-Dist: transformers...`` line (without an extra) of the
wheel's METADATA.

A project that pins transformers and does not declare trl runs on a trl release that pip can
install beside that transformers: the target trl is then the newest known release whose range
admits the target transformers (``trainlint.resolve``), not whatever is installed here.

    python scripts/gen_trl_requires.py --wheel-dir /tmp/trainlint-wheels

Versions are those of the TRL data (``trainlint.knowledge.training_args.trl_known_versions``);
wheels are downloaded with ``pip download --no-deps`` (reused from ``--wheel-dir``) and only
their METADATA is read.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from gen_training_args import download, vkey

from trainlint.knowledge import training_args as ta

OUT = ROOT / "trainlint" / "knowledge" / "data" / "trl_requires.json"
_REQ = re.compile(r"^Requires-Dist:\s*transformers\s*(?:\[[^\]]*\])?\s*\(?([^;()]*)\)?\s*$", re.IGNORECASE)


def transformers_requirement(wheel: Path) -> str:
    """The specifier of trl's plain ``transformers`` requirement ("" when unbounded or absent)."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(name).decode("utf-8", "replace")
    for line in text.splitlines():
        m = _REQ.match(line.strip())
        if m:
            return m.group(1).strip()
    return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel-dir", type=Path, required=True, help="download wheels here and reuse them")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--jobs", type=int, default=4)
    args = ap.parse_args(argv)
    versions = sorted(ta.trl_known_versions(), key=vkey)
    args.wheel_dir.mkdir(parents=True, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        wheels = dict(zip(versions, pool.map(lambda v: download("trl", v, args.wheel_dir), versions)))
    doc = {"schema": 1, "generator": "python scripts/gen_trl_requires.py",
           "transformers": {v: transformers_requirement(wheels[v]) for v in versions}}
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(versions)} trl releases)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
