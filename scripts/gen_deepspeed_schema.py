"""Generate trainlint/knowledge/data/deepspeed_schema.json from a DeepSpeed source tree.

Usage: python scripts/gen_deepspeed_schema.py /path/to/deepspeed-X.Y.Z

Reads (with ``ast``, nothing is imported) the pydantic models of ``runtime/zero/config.py``
and ``runtime/zero/offload_config.py``: every field name, its alias, its default and whether
it is marked deprecated (with the replacement DeepSpeed names), plus the top-level keys named
in ``runtime/constants.py``, and the keys of removed features that ``runtime/config.py`` rejects
(``removed_keys``: MiCS's ``zero_optimization.mics_shard_size``, ...) with DeepSpeed's message.
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


def removed_keys(path: Path) -> dict[str, dict[str, str]]:
    """``_REMOVED_TOP_LEVEL_CONFIG_KEYS`` / ``_REMOVED_ZERO_CONFIG_KEYS`` of ``runtime/config.py``
    (DeepSpeed 0.19 on): key -> the DeepSpeedConfigError message, f-string parts joined (the
    removed-features issue link dropped); empty in a release without them."""
    out: dict[str, dict[str, str]] = {"top_level": {}, "zero_optimization": {}}
    names = {"_REMOVED_TOP_LEVEL_CONFIG_KEYS": "top_level", "_REMOVED_ZERO_CONFIG_KEYS": "zero_optimization"}
    for node in ast.parse(path.read_text()).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in names and isinstance(node.value, ast.Dict)):
            continue
        for k, v in zip(node.value.keys, node.value.values):
            key = _const(k)
            parts = v.values if isinstance(v, ast.JoinedStr) else [v]
            text = "".join(_text(part) for part in parts)
            text = re.sub(r"\s*See \{[^}]*\}\.?", "", text).strip()
            out[names[node.targets[0].id]][key] = text
    return out


def _text(node) -> str:
    """The literal text of a string, an f-string, or ``"a" "b"`` / ``"a" f"{x}"`` concatenations."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_text(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return "{" + ast.unparse(node.value) + "}"
    if isinstance(node, ast.BinOp):
        return _text(node.left) + _text(node.right)
    return ""


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
        "removed_keys": removed_keys(ds / "config.py"),
    }
    OUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
