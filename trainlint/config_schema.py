"""The schema of the settings and of the rules' options, as pydantic models: imported only when
a value needs more than the plain type check of ``trainlint.config`` (a coercion, or an error
message), or when a rule's options are set. A run without either never imports pydantic.
``trainlint.config`` turns a ``ValidationError`` into its ``ConfigError``.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

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


def settings_values(data: dict[str, Any]) -> dict[str, Any]:
    """The values of the settings in ``data`` through the schema (raises ``ValidationError``)."""
    model = SettingsModel.model_validate(data)
    return {name: getattr(model, name) for name in SettingsModel.model_fields}


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


def option_values(options: type, raw: dict[str, Any]) -> dict[str, Any]:
    """The values of a ``RuleOptions`` class's options in the table ``raw`` through its schema
    (raises ``ValidationError``)."""
    model = options_model(options).model_validate(raw)
    return {name: getattr(model, name) for name in options.specs()}
