"""Generate trainlint/knowledge/data/deepspeed_schema.json from a DeepSpeed source tree.

Usage: python scripts/gen_deepspeed_schema.py /path/to/deepspeed-X.Y.Z

Reads (with ``ast``, nothing is imported) the pydantic models of ``runtime/zero/config.py``
and ``runtime/zero/offload_config.py``: every field name, its alias, its default and whether
it is marked deprecated (with the replacement DeepSpeed names), plus the top-level keys named
in ``runtime/constants.py``.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "trainlint" / "knowledge" / "data" / "deepspeed_schema.json"


def _const(node):
    try:
        return ast.literal_eval(node)
    except Exception:  # noqa: BLE001 - defaults like pp_int(5e8)
        if isinstance(node, ast.Call) and node.args:
            try:
                return ast.literal_eval(node.args[0])
            except Exception:  # noqa: BLE001
                return None
        return None


def model_fields(path: Path, class_name: str) -> dict[str, dict]:
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    out: dict[str, dict] = {}
    for stmt in cls.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        name = stmt.target.id
        info: dict = {"default": None}
        v = stmt.value
        if isinstance(v, ast.Call) and getattr(v.func, "id", "") == "Field":
            if v.args:
                info["default"] = _const(v.args[0])
            for kw in v.keywords:
                if kw.arg == "alias":
                    info["alias"] = _const(kw.value)
                elif kw.arg == "default":
                    info["default"] = _const(kw.value)
                elif kw.arg == "json_schema_extra" and isinstance(kw.value, ast.Dict):
                    for k, val in zip(kw.value.keys, kw.value.values):
                        key = _const(k)
                        if key == "deprecated":
                            info["deprecated"] = bool(_const(val))
                        elif key == "new_param":
                            info["new_param"] = _const(val)
        elif v is not None:
            info["default"] = _const(v)
        if isinstance(info.get("default"), float) and info["default"].is_integer():
            info["default"] = int(info["default"])
        out[name] = info
    return out


def main(root: str) -> None:
    ds = Path(root) / "deepspeed" / "runtime"
    version = re.search(r"deepspeed-([0-9.]+)", root)
    zero = model_fields(ds / "zero" / "config.py", "DeepSpeedZeroConfig")
    off_param = model_fields(ds / "zero" / "offload_config.py", "DeepSpeedZeroOffloadParamConfig")
    off_opt = model_fields(ds / "zero" / "offload_config.py", "DeepSpeedZeroOffloadOptimizerConfig")
    consts = re.findall(r'^[A-Z_0-9]+ = "([a-z_0-9]+)"$', (ds / "constants.py").read_text(), re.M)
    data = {
        "source": f"deepspeed {version.group(1) if version else '?'} runtime/zero/config.py, "
                  "runtime/zero/offload_config.py, runtime/constants.py (read with ast)",
        "zero_optimization": zero,
        "offload_param": off_param,
        "offload_optimizer": off_opt,
        "constants": sorted(set(consts)),
    }
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
