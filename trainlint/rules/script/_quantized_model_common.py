"""Helpers shared by the rules split out of `quantized_model`: TL103 device-map-multi-process, TL104 cast-quantized-model, TL105 quantized-without-adapters."""

from __future__ import annotations

from trainlint.analysis import LoadCall


def _quantized_loads(loads: list[LoadCall]) -> list[LoadCall]:
    return [ld for ld in loads if ld.quant is not None]

