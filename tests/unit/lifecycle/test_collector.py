"""A long-running process tunes the cyclic collector once it is up (``tune_collector``): what
start-up allocated is frozen out of the collector's passes, and young passes run less often."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from lifecycle.collector import GC_THRESHOLDS, tune_collector


@pytest.fixture
def collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("collector")
def test_what_start_up_allocated_is_frozen_and_young_passes_are_rarer() -> None:
    tune_collector()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == GC_THRESHOLDS
    assert GC_THRESHOLDS[0] > 700  # Python's default: a young pass every 700 allocations
