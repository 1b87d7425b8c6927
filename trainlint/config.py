"""Settings: ``[tool.trainlint]`` from the nearest pyproject.toml, overridden by the command line.

```toml
[tool.trainlint]
select = ["ALL"]            # code prefixes, codes or rule names
ignore = ["TL201"]
gpu = "A100-80GB"           # target GPU (or "auto": nvidia-smi)
gpus = 4                    # world size when no launch line says
transformers-version = "5.24.0"
base = "HEAD"               # the git revision lr-not-scaled compares with
fail-on = "warning"         # lowest severity that makes the exit code 1 (info is advice)

[tool.trainlint.per-file-ignores]
"legacy/*.py" = ["TL6"]

[tool.trainlint.lr-not-scaled]  # options of one rule, by its name
rule = "sqrt"
```

Command-line options override the file; an explicit ``--select`` replaces the file's
``select`` and ``ignore`` (``--ignore`` on the command line still applies).
"""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trainlint.diagnostics import Severity

if sys.version_info >= (3, 11):  # pragma: no cover
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """Bad configuration: a usage error (exit code 2)."""


class Settings(BaseModel):
    # Validated only when a pyproject table or a command-line option sets something
    # (``load_settings``): the defaults need no validator, and building one is ~10 ms.
    model_config = ConfigDict(populate_by_name=True, extra="forbid", defer_build=True)

    # Plain defaults, not default_factory: pydantic copies them per instance, and a factory
    # makes model_construct() inspect its signature (tokenizing ``list``'s text signature).
    select: list[str] = ["ALL"]
    ignore: list[str] = []
    extend_select: list[str] = Field(default=[], alias="extend-select")
    per_file_ignores: dict[str, list[str]] = Field(default={}, alias="per-file-ignores")
    exclude: list[str] = []
    gpu: str | None = None
    gpus: int | None = Field(default=None, ge=1)
    transformers_version: str | None = Field(default=None, alias="transformers-version")
    trl_version: str | None = Field(default=None, alias="trl-version")
    base: str = "HEAD"
    fail_on: Severity = Field(default=Severity.WARNING, alias="fail-on")
    rule_options: dict[str, dict[str, Any]] = {}
    project_root: Path | None = None  # the folder of the pyproject.toml the settings came from
    # the project whose declared versions are the targets: resolved once per run from the
    # command line's paths (``knowledge.versions.find_project_root``), shared by workers
    target_root: Path | None = None
    config_path: Path | None = None

    def ignored_for(self, path: str) -> list[str]:
        out: list[str] = []
        rel = path
        if self.project_root is not None:
            try:
                rel = str(Path(path).resolve().relative_to(self.project_root.resolve()))
            except ValueError:
                rel = path
        for pattern, codes in self.per_file_ignores.items():
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(Path(path).name, pattern) \
                    or fnmatch.fnmatch(path, pattern):
                out.extend(codes)
        return out

    def options_for(self, rule: Any) -> BaseModel:
        raw = self.rule_options.get(rule.name)
        if not raw:
            return rule.Options.model_construct()
        try:
            return rule.Options.model_validate(raw)
        except ValidationError as e:
            raise ConfigError(f"invalid options for rule {rule.name}: {e.errors()[0]['msg']} "
                              f"({'.'.join(str(x) for x in e.errors()[0]['loc'])})") from None


_TOP_KEYS = {"select", "ignore", "extend-select", "per-file-ignores", "exclude", "gpu", "gpus",
             "transformers-version", "trl-version", "base", "fail-on"}


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    for d in (folder, *folder.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if "trainlint" in data.get("tool", {}):
                return candidate
    return None


def load_settings(start: Path | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from the nearest pyproject.toml with a ``[tool.trainlint]`` table above
    ``start`` (default: the working directory), then ``overrides`` (command-line values)."""
    data: dict[str, Any] = {}
    path = find_pyproject(start or Path.cwd())
    rule_options: dict[str, dict[str, Any]] = {}
    if path is not None:
        table = tomllib.loads(path.read_text(encoding="utf-8"))["tool"]["trainlint"]
        from trainlint.rule_index import lookup

        for key, value in table.items():
            if key in _TOP_KEYS:
                data[key] = value
            elif isinstance(value, dict) and lookup(key) is not None:
                rule_options[lookup(key)["name"]] = value  # type: ignore[index]
            else:
                raise ConfigError(f"{path}: unknown key [tool.trainlint] {key!r}")
        data["project_root"] = path.parent
        data["config_path"] = path
    overrides = dict(overrides or {})
    if overrides.get("select") and "ignore" in data and not overrides.get("ignore"):
        # an explicit --select is what the user wants to see: it replaces the file's selection
        data.pop("ignore")
    for key, value in overrides.items():
        if value is None or value == [] or value == ():
            continue
        data[key.replace("_", "-") if key.replace("_", "-") in _TOP_KEYS else key] = value
    if not data and not rule_options:
        return Settings.model_construct()  # nothing set: the defaults, nothing to validate
    data["rule_options"] = rule_options
    try:
        return Settings.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"invalid setting {'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from None
