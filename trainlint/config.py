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
import re
import sys
from pathlib import Path
from typing import Any

from trainlint.lazyre import lazy
from trainlint.diagnostics import Severity

if sys.version_info >= (3, 11):  # pragma: no cover
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """Bad configuration: a usage error (exit code 2)."""


# name: (the key in [tool.trainlint], the default). The schema with its constraints (``gpus``
# >= 1, ``fail-on`` a severity, no other key) is ``trainlint.config_schema``'s pydantic model;
# ``load_settings`` accepts values of exactly the right type itself and asks pydantic (imported
# only then) for anything else: its coercions and its error messages.
FIELDS: dict[str, tuple[str, Any]] = {
    "select": ("select", ("ALL",)),
    "ignore": ("ignore", ()),
    "extend_select": ("extend-select", ()),
    "per_file_ignores": ("per-file-ignores", {}),
    "exclude": ("exclude", ()),
    "gpu": ("gpu", None),
    "gpus": ("gpus", None),
    "transformers_version": ("transformers-version", None),
    "trl_version": ("trl-version", None),
    "base": ("base", "HEAD"),
    "fail_on": ("fail-on", Severity.WARNING),
    "rule_options": ("rule_options", {}),
    "project_root": ("project_root", None),  # the folder of the pyproject.toml the settings came from
    # the project whose declared versions are the targets: resolved once per run from the
    # command line's paths (``knowledge.versions.find_project_root``), shared by workers
    "target_root": ("target_root", None),
    "config_path": ("config_path", None),
}


def _fresh(default: Any) -> Any:
    if isinstance(default, tuple):
        return list(default)
    if isinstance(default, dict):
        return dict(default)
    return default


class Settings:
    """The settings of a run (plain attributes; see ``FIELDS``). ``Settings(**values)`` does not
    validate: ``load_settings`` does."""

    __slots__ = tuple(FIELDS)
    model_fields = FIELDS  # the field names, as the pydantic model had them

    select: list[str]
    ignore: list[str]
    extend_select: list[str]
    per_file_ignores: dict[str, list[str]]
    exclude: list[str]
    gpu: str | None
    gpus: int | None
    transformers_version: str | None
    trl_version: str | None
    base: str
    fail_on: Severity
    rule_options: dict[str, dict[str, Any]]
    project_root: Path | None
    target_root: Path | None
    config_path: Path | None

    def __init__(self, **values: Any) -> None:
        unknown = set(values) - set(FIELDS)
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        for name, (_, default) in FIELDS.items():
            setattr(self, name, values[name] if name in values else _fresh(default))

    @classmethod
    def model_construct(cls, **values: Any) -> Settings:
        """The defaults with ``values`` set, unvalidated."""
        return cls(**values)

    def model_copy(self, update: dict[str, Any] | None = None) -> Settings:
        """A shallow copy with ``update`` set (unvalidated)."""
        values = {name: getattr(self, name) for name in FIELDS}
        values.update(update or {})
        return type(self)(**values)

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name in FIELDS:
            setattr(self, name, state[name] if name in state else _fresh(FIELDS[name][1]))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.__getstate__() == other.__getstate__()  # type: ignore[union-attr]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "Settings(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in FIELDS) + ")"

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

    def options_for(self, rule: Any) -> Any:
        raw = self.rule_options.get(rule.name)
        if not raw:
            return rule.Options.model_construct()
        from pydantic import ValidationError

        from trainlint.config_schema import option_values

        try:
            return rule.Options.model_construct(**option_values(rule.Options, raw))
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
                from trainlint.knowledge import tomlfile

                data = tomlfile.load(candidate)
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if "trainlint" in data.get("tool", {}):
                return candidate
    return None


_VERSION = lazy(r"^v?\d+(\.\d+){0,3}((a|b|rc|\.?dev|\.?post)\d*)?(\+[\w.]+)?$", re.I)


def _check_versions(data: dict[str, Any], path: Path | None, overrides: dict[str, Any]) -> None:
    for key in ("transformers-version", "trl-version"):
        value = overrides.get(key) or overrides.get(key.replace("-", "_"))
        where = f"--{key}"
        if not value:
            value, where = data.get(key), f"{path}: [tool.trainlint] {key}"
        if value and not _VERSION.match(str(value).strip()):
            raise ConfigError(f"{where}: {str(value)!r} is not a version (expected e.g. 4.46.0 or 5.0.0rc1)")


def version_notes(settings: Settings) -> list[str]:
    """For an explicit version the data does not know: which known version is used instead."""
    from trainlint.knowledge import training_args as ta

    out = []
    for package, value, known in (("transformers", settings.transformers_version, ta.known_versions),
                                  ("trl", settings.trl_version, ta.trl_known_versions)):
        if not value:
            continue
        versions = known()
        v = str(value).strip().lstrip("v")
        if v in versions:
            continue
        k = ta.vkey(v)
        below = [x for x in versions if ta.vkey(x) <= k]
        used = below[-1] if below else versions[0]
        why = "the newest known at or below it" if below else "the oldest known"
        out.append(f"{package} {v} is not in trainlint's data ({versions[0]} .. {versions[-1]}); "
                   f"checking against {used}, {why}")
    return out


def _check_selectors(data: dict[str, Any], overrides: dict[str, Any], path: Path | None) -> None:
    """An unknown code, prefix or name in a selection is a usage error, never silence."""
    lists: list[tuple[str, Any]] = []
    for key in ("select", "ignore", "extend-select"):
        lists.append((f"--{key}", overrides.get(key) or overrides.get(key.replace("-", "_"))))
        lists.append((f"{path}: [tool.trainlint] {key}", data.get(key)))
    pfi = data.get("per-file-ignores")
    if isinstance(pfi, dict):
        lists.extend((f"{path}: [tool.trainlint.per-file-ignores] {pattern!r}", codes) for pattern, codes in pfi.items())
    if not any(values for _, values in lists):
        return
    from trainlint.rule_index import unknown_selector

    for where, values in lists:
        if not isinstance(values, (list, tuple)):
            continue
        for value in values:
            if isinstance(value, str):
                problem = unknown_selector(value)
                if problem is not None:
                    raise ConfigError(f"{where}: {problem}")


def load_settings(start: Path | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Settings from the nearest pyproject.toml with a ``[tool.trainlint]`` table above
    ``start`` (default: the working directory), then ``overrides`` (command-line values)."""
    data: dict[str, Any] = {}
    path = find_pyproject(start or Path.cwd())
    rule_options: dict[str, dict[str, Any]] = {}
    if path is not None:
        from trainlint.knowledge import tomlfile

        table = tomlfile.load(path)["tool"]["trainlint"]
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
    _check_selectors(data, overrides, path)
    _check_versions(data, path, overrides)
    if overrides.get("select") and "ignore" in data and not overrides.get("ignore"):
        # an explicit --select is what the user wants to see: it replaces the file's selection
        data.pop("ignore")
    for key, value in overrides.items():
        if value is None or value == [] or value == ():
            continue
        data[key.replace("_", "-") if key.replace("_", "-") in _TOP_KEYS else key] = value
    if not data and not rule_options:
        return Settings()  # nothing set: the defaults, nothing to validate
    data["rule_options"] = rule_options
    plain = _plain_values(data)
    if plain is not None:
        return Settings(**plain)
    return _validated(data)


def _validated(data: dict[str, Any]) -> Settings:
    """``Settings`` from ``data`` through the pydantic schema; a bad value is a ``ConfigError``."""
    from pydantic import ValidationError

    from trainlint.config_schema import settings_values

    try:
        return Settings(**settings_values(data))
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"invalid setting {'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from None


def _str_list(v: Any) -> bool:
    return type(v) is list and all(type(x) is str for x in v)


def _optional(kind: type) -> Any:
    return lambda v: v is None or type(v) is kind


_PLAIN_CHECKS: dict[str, Any] = {
    "select": _str_list, "ignore": _str_list, "extend_select": _str_list, "exclude": _str_list,
    "per_file_ignores": lambda v: type(v) is dict and all(type(k) is str and _str_list(x) for k, x in v.items()),
    "gpu": _optional(str), "transformers_version": _optional(str), "trl_version": _optional(str),
    "gpus": lambda v: v is None or (type(v) is int and v >= 1),
    "base": lambda v: type(v) is str,
    "fail_on": lambda v: isinstance(v, Severity) or (type(v) is str and v in Severity._value2member_map_),
    "rule_options": lambda v: type(v) is dict and all(type(k) is str and type(x) is dict for k, x in v.items()),
    "project_root": _optional(type(Path())), "target_root": _optional(type(Path())),
    "config_path": _optional(type(Path())),
}
_BY_KEY = {key: name for name, (key, _) in FIELDS.items()}


def _plain_values(data: dict[str, Any]) -> dict[str, Any] | None:
    """The settings of ``data`` (keys as in [tool.trainlint], or field names) when every value
    has exactly the type the schema asks for and meets its constraints, which is what the
    schema would give too; None for anything else (pydantic decides: coercion or error)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = _BY_KEY.get(key, key if key in FIELDS else None)
        if name is None or name in out or not _PLAIN_CHECKS[name](value):
            return None
        out[name] = Severity(value) if name == "fail_on" else value
    return out
