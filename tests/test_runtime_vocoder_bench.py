"""The vocoder benchmark's model of upstream streaming, and its field probe."""

from __future__ import annotations

import pytest

import realtime.engine.compat  # noqa: F401  (before ChatTTS / vocos)
from bench import vocoder as bench
from realtime.engine.vocoder.stream import receptive_radius_steps

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_upstream_decodes_every_24_steps_and_once_at_the_end():
    points = bench.upstream_stream_points(937)
    assert points[:3] == [24, 48, 72]
    assert points[-2:] == [936, 937]
    assert len(points) == 40
    assert sum(points) == 19657
    # A length that is a multiple of 24 is decoded twice, as upstream does.
    assert bench.upstream_stream_points(48) == [24, 48, 48]


def test_field_probe_stays_inside_the_theoretical_radius():
    decoder, vocos = bench.random_models(tiny=True, seed=0)
    field = bench.measure_field(decoder, vocos, steps=120)
    radius = receptive_radius_steps(decoder, vocos)
    assert 0 < field["field_100db_before"] <= field["field_exact_before"] <= radius
    assert 0 < field["field_60db_after"] <= field["field_100db_after"] <= field["field_exact_after"] <= radius


def test_ours_stream_timing_reports_the_first_chunk():
    decoder, vocos = bench.random_models(tiny=True, seed=0)
    vocoder = bench.StreamingVocoder(decoder, vocos, lookahead_steps=8, min_chunk_steps=4)
    total, first_steps, first_s = bench.ours_stream_s(
        vocoder, bench.random_hidden(40, bench.hidden_dim(decoder)))
    assert first_steps == 12
    assert 0 < first_s <= total
