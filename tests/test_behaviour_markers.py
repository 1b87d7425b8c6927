"""The generated behaviour markers agree with the installed libraries' source."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from pathlib import Path

import pytest

from trainlint.knowledge import behaviour


def _installed_file(package: str, inner: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent.parent / inner
    return path if path.is_file() else None


@pytest.mark.parametrize("marker", behaviour.markers())
def test_marker_matches_installed_source(marker):
    m = behaviour._data()["markers"][marker]
    path = _installed_file(m["package"], m["file"])
    if path is None:
        pytest.skip(f"{m['package']} is not installed")
    version = importlib.metadata.version(m["package"])
    match = re.search(m["pattern"], path.read_text(encoding="utf-8"))
    assert behaviour.holds(marker, version) == (match is not None), (marker, version)
    if "quotes" in m:  # what a rule's message cites is what the installed source says
        assert behaviour.quote(marker, version) == (match.group("quote") if match else None), (marker, version)


def test_marker_ranges_are_ordered_and_known():
    data = behaviour._data()
    for marker, m in data["markers"].items():
        known = data["versions"][m["package"]]
        for lo, hi in m["present"]:
            assert lo in known and hi in known, marker
            assert known.index(lo) <= known.index(hi), marker


def test_early_stopping_assert_is_4x_only():
    assert behaviour.holds("early_stopping_asserts_load_best", "4.40.0")
    assert not behaviour.holds("early_stopping_asserts_load_best", "5.0.0")


def test_trainer_check_windows_read_from_the_wheels():
    """The windows the TL2xx/TL6xx rules read instead of version numbers in their modules."""
    first, removed = behaviour.first_version, behaviour.removed_in
    assert first("label_smoothing_off_for_multi_label") == "4.56.0"
    assert first("save_only_model_rejects_sharded_fsdp") == "4.50.0"
    assert first("trainer_rejects_model_and_model_init") == "5.2.0"  # a warning before
    assert first("trainer_rejects_optimizers_with_optimizer_cls_and_kwargs") == "4.47.0"
    assert removed("trainer_rejects_optimizers_with_deepspeed") == "4.46.0"
    assert removed("evaluation_strategy_enum_exists") == "5.0.0"
    assert removed("warmup_ratio_range_checked") == "5.0.0"
    assert removed("trainer_rejects_headless_model") is None
    assert behaviour.package("grpo_rejects_auto_find_batch_size") == "trl"
    assert behaviour.holds("fsdp_legacy_applied_to_config", "5.10.1")
    assert not behaviour.holds("fsdp_legacy_applied_to_config", "5.9.0")
