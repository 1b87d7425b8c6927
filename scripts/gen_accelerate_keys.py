"""Generate trainlint/knowledge/data/accelerate_keys.json: the top-level keys an accelerate
config file may have, per released accelerate version.

``accelerate launch --config_file`` loads the file into ``ClusterConfig`` (or
``SageMakerConfig``) and raises "The config file at ... had unknown keys" for any other key
(``commands/config/config_args.py``, ``from_yaml_file``/``from_json_file``). For each version
the script downloads the wheel (``pip download --no-deps``, reusing ``--wheel-dir``), reads the
dataclass fields of ``BaseConfig``, ``ClusterConfig`` and ``SageMakerConfig`` with ``ast``
(nothing is imported), plus the legacy keys ``process_config`` converts before the check
(``fp16``, ``dynamo_backend``), and writes, per key, the versions that accept it.

    python scripts/gen_accelerate_keys.py --wheel-dir /tmp/trainlint-wheels
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from gen_training_args import download, vkey  # noqa: E402

DEFAULT_OUT = ROOT / "trainlint" / "knowledge" / "data" / "accelerate_keys.json"
INNER = "accelerate/commands/config/config_args.py"
CLASSES = ("BaseConfig", "ClusterConfig", "SageMakerConfig")
FIRST = (0, 26, 0)  # accelerate 0.26 (January 2024) and later: what the supported transformers need


def versions() -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "accelerate"], capture_output=True,
                         text=True, check=True).stdout
    line = next(ln for ln in out.splitlines() if ln.startswith("Available versions:"))
    vs = [v.strip() for v in line.split(":", 1)[1].split(",")]
    vs = [v for v in vs if v.replace(".", "").isdigit() and tuple(int(x) for x in v.split(".")) >= FIRST]
    by_minor: dict[str, str] = {}
    for v in sorted(vs, key=vkey):  # the newest patch of every minor
        by_minor[".".join(v.split(".")[:2])] = v
    return sorted(by_minor.values(), key=vkey)


def keys_of(wheel: Path) -> tuple[set[str], set[str]]:
    with zipfile.ZipFile(wheel) as z:
        tree = ast.parse(z.read(INNER).decode("utf-8"))
    cluster: set[str] = set()
    sagemaker: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in CLASSES:
            names = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            if node.name in ("BaseConfig", "ClusterConfig"):
                cluster |= names
            if node.name in ("BaseConfig", "SageMakerConfig"):
                sagemaker |= names
    legacy = {"fp16", "dynamo_backend"}  # converted by BaseConfig.process_config before the check
    return cluster | legacy, sagemaker | legacy


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wheel-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--versions", nargs="*")
    args = ap.parse_args(argv)
    vs = args.versions or versions()
    args.wheel_dir.mkdir(parents=True, exist_ok=True)
    table: dict[str, dict[str, list[str]]] = {"cluster": {}, "sagemaker": {}}
    for v in vs:
        cluster, sagemaker = keys_of(download("accelerate", v, args.wheel_dir))
        for kind, keys in (("cluster", cluster), ("sagemaker", sagemaker)):
            for k in keys:
                table[kind].setdefault(k, []).append(v)
    doc = {"schema": 1, "generator": "python scripts/gen_accelerate_keys.py", "versions": vs,
           "keys": {kind: {k: [v[0], v[-1]] for k, v in sorted(t.items())} for kind, t in table.items()}}
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(vs)} versions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
