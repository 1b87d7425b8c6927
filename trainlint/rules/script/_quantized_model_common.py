"""Helpers shared by the rules split out of `quantized_model`: TL103 device-map-multi-process, TL104 cast-quantized-model, TL105 quantized-without-adapters."""

from __future__ import annotations

from trainlint.analysis import LoadCall

# the keywords ``analysis.quantization_of`` reads a load's quantization from: a rule about a
# quantized load can report only where one occurs (``Rule.fires_on``)
QUANT_WORDS = ("load_in_4bit", "load_in_8bit", "quantization_config")


def _quantized_loads(loads: list[LoadCall]) -> list[LoadCall]:
    return [ld for ld in loads if ld.quant is not None]

