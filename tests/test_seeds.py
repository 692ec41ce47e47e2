"""One home for the random streams (attnbook.seeds): each stream is default_rng(offset + seed)."""

from __future__ import annotations

import numpy as np
import pytest

from attnbook.seeds import OFFSETS, stream


@pytest.mark.parametrize("name", sorted(OFFSETS))
def test_a_stream_is_the_generator_at_its_offset(name: str) -> None:
    for seed in (0, 3):
        ours = stream(name, seed).standard_normal(4)
        assert np.array_equal(ours, np.random.default_rng(OFFSETS[name] + seed).standard_normal(4))


def test_the_start_stream_is_the_hundred_offset_the_stored_runs_used() -> None:
    assert OFFSETS["data"] == 0 and OFFSETS["start"] == 100 and OFFSETS["probe"] == 300


def test_bad_names_and_seeds_are_named() -> None:
    with pytest.raises(ValueError, match="name must be one of"):
        stream("init", 0)
    for seed in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            stream("start", seed)
