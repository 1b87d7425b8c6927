"""The schema of the settings and of the rules' options, as pydantic models: imported only when
a value needs more than the plain type check of ``trainlint.config`` (a coercion, or an error
message), or when a rule's options are set. A run without either never imports pydantic.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from trainlint.config import FIELDS, ConfigError, Settings
from trainlint.diagnostics import Severity


class SettingsModel(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

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
    project_root: Path | None = None
    target_root: Path | None = None
    config_path: Path | None = None


assert set(SettingsModel.model_fields) == set(FIELDS), "the schema and config.FIELDS differ"


def validate_settings(data: dict[str, Any]) -> Settings:
    """``Settings`` from ``data`` through the schema; a bad value is a ``ConfigError``."""
    try:
        model = SettingsModel.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise ConfigError(f"invalid setting {'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from None
    return Settings(**{name: getattr(model, name) for name in FIELDS})


_MODELS: dict[type, type[BaseModel]] = {}


def options_model(options: type) -> type[BaseModel]:
    """The pydantic model of a ``RuleOptions`` class (its ``option(...)`` specs)."""
    model = _MODELS.get(options)
    if model is None:
        hints = typing.get_type_hints(options)
        fields = {name: (hints[name], Field(spec.default, alias=spec.alias, description=spec.description or None,
                                            **spec.constraints))
                  for name, spec in options.specs().items()}
        model = _MODELS[options] = create_model(  # type: ignore[call-overload]
            options.__name__, __config__=ConfigDict(extra="forbid", populate_by_name=True), **fields)
    return model


def validate_options(options: type, rule_name: str, raw: dict[str, Any]) -> Any:
    """An instance of ``options`` (a ``RuleOptions`` class) from the ``[tool.trainlint.<rule>]``
    table ``raw``; a bad value is a ``ConfigError``."""
    try:
        model = options_model(options).model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"invalid options for rule {rule_name}: {e.errors()[0]['msg']} "
                          f"({'.'.join(str(x) for x in e.errors()[0]['loc'])})") from None
    return options.model_construct(**{name: getattr(model, name) for name in options.specs()})
