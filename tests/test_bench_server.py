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


def test_paired_figures_are_per_round_ratios_and_their_quartiles():
    from bench.server import timestamps_figures

    off = [{"cpu_us_per_frame": c, "first_frame_ms": f, "loop_cpu_us_per_frame": c / 2} for c, f in
           [(50.0, 10.0), (60.0, 12.0), (40.0, 9.0), (55.0, 11.0), (45.0, 10.0)]]
    # per round: 1.02, 1.05, 1.10, 1.00, 1.04 -> sorted 1.00 1.02 1.04 1.05 1.10
    on = [{"cpu_us_per_frame": c, "first_frame_ms": f, "loop_cpu_us_per_frame": loop}
          for c, f, loop in [(51.0, 10.5, 26.0), (63.0, 12.0, 30.6), (44.0, 8.0, 20.8),
                             (55.0, 11.2, 27.5), (46.8, 10.4, 23.85)]]
    got = timestamps_figures(on, off)
    assert got["timestamps_cost_ratio_paired"] == 1.04
    assert got["timestamps_cost_ratio_p25"] == 1.02
    assert got["timestamps_cost_ratio_p75"] == 1.05
    # the loop's added CPU over the whole off: 1.02 1.01 1.02 1.00 1.03
    assert got["timestamps_loop_cost_paired"] == 1.02
    assert got["timestamps_loop_cost_p25"] == 1.01
    assert got["timestamps_loop_cost_p75"] == 1.02
    assert got["timestamps_added_first_frame_ms_paired"] == 0.2  # of +.5 0 -1 +.2 +.4


def test_one_round_has_no_spread_and_unpaired_rounds_are_refused():
    from bench.paired import paired_ratios, spread

    assert spread([1.5]) == {"median": 1.5, "p25": 1.5, "p75": 1.5}
    assert spread([4.0, 1.0]) == {"median": 2.5, "p25": 1.75, "p75": 3.25}
    with pytest.raises(ValueError):
        paired_ratios([1.0, 2.0], [1.0])


def test_callgrind_dumps_are_read_per_thread_and_summarized(tmp_path):
    from bench.server_callgrind import read_dump, summarize

    for thread, count in (("01", 600), ("11", 300), ("21", 100)):
        (tmp_path / f"cg.3-{thread}").write_text(f"version: 1\nsummary: {count}\ntotals: {count}\n")
    (tmp_path / "cg.30-01").write_text("summary: 5\n")  # another dump: not this one's
    assert read_dump(str(tmp_path / "cg.3")) == (1000, 600)
    # rounds of (frames, instructions, event loop): on costs 4%, then 2%, then 3% more
    off = [(100, 10_000, 6_000), (100, 10_000, 6_000), (200, 20_000, 12_000)]
    on = [(100, 10_400, 6_400), (100, 10_200, 6_200), (200, 20_600, 12_600)]
    got = summarize(off, on)
    assert got["callgrind_timestamps_ratio"] == 1.03
    assert (got["callgrind_timestamps_ratio_p25"], got["callgrind_timestamps_ratio_p75"]) == (1.025, 1.035)
    assert got["callgrind_instructions_per_frame_off"] == 100
    assert got["callgrind_instructions_per_frame_on"] == 103
    assert got["callgrind_added_instructions_per_frame"] == 3
    assert got["callgrind_loop_timestamps_ratio"] == 1.05
    assert got["callgrind_rounds"] == 3
    # the event loop's added 400, 200, 300 a frame (per 100 frames) over 10000: the whole's
    assert got["callgrind_timestamps_cost"] == 1.03
    assert (got["callgrind_timestamps_cost_p25"], got["callgrind_timestamps_cost_p75"]) == (1.025, 1.035)
