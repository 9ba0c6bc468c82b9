"""bench/server.py's text: as long as the frames asked for, at the tone runner's rate."""

from __future__ import annotations

import pytest

from bench.server import FRAME_SAMPLES, _text_for_frames


@pytest.mark.parametrize("codes_per_char", [1.0, 3.4])
def test_the_text_makes_the_frames_asked_for_at_its_rate(codes_per_char):
    text = _text_for_frames(300, codes_per_char)
    samples = len(text) * codes_per_char * 512  # the tone runner: 512 samples a code
    assert 300 * FRAME_SAMPLES <= samples < 300 * FRAME_SAMPLES + 2 * codes_per_char * 512
    assert text.count(".") >= 1 and "word" in text
