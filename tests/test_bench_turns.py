"""The streamed-turn bench's measurements: its summary and headline, and one short
burst against a real server."""

from __future__ import annotations

from bench.turns import Turn, burst, headline, summarize
from realtime.engine.tone import ToneRunner


def turn(admitted=True, sentence_at=0.5, first_ms=None, gaps=(), outcome="done", hint=None):
    t = Turn(opened=0.0, answered=0.001, admitted=admitted, outcome=outcome, retry_after_ms=hint)
    if admitted:
        t.sentence_at = sentence_at
    if first_ms is not None:
        t.first_audio = sentence_at + first_ms / 1000.0
        at = t.first_audio
        t.frames = [(at, 0.1)]
        for gap in gaps:  # each next frame `gap` s after the one before
            at += gap
            t.frames.append((at, 0.1))
    return t


def test_summary_counts_turns_stalls_and_good_ones():
    turns = [turn(first_ms=300), turn(first_ms=200, gaps=(0.1, 0.4)),  # stalls once
             turn(first_ms=1500),  # too late to be a good turn
             turn(first_ms=100, outcome=None),  # never finished
             turn(admitted=False, outcome="overloaded", hint=1200),
             turn(admitted=False, outcome="overloaded", hint=1400)]
    out = summarize(turns)
    assert (out["offered"], out["admitted"], out["refused"], out["unfinished"]) == (6, 4, 2, 1)
    assert out["stalled"] == 1 and out["stalled_share"] == 0.25
    assert out["good"] == 1 and out["retry_after_ms_p50"] == 1300
    assert 1000 < out["ttfa_p99_ms"] <= 1500


def test_headline_takes_medians_per_mode():
    rows = [{"mode": "hold", "admitted": a, "refused": 2, "stalled_share": 0.0,
             "ttfa_p99_ms": 400.0, "good": a} for a in (4, 5, 9)]
    rows += [{"mode": "no-hold", "admitted": 8, "refused": 0, "stalled_share": s,
              "ttfa_p99_ms": None, "good": 3} for s in (0.5, 0.25, 0.0)]
    head = headline(rows)
    assert head["admitted_hold"] == 5 and head["stalled_share_no_hold"] == 0.25
    assert head["ttfa_p99_ms_no_hold"] is None and "cpu" in head


async def test_a_burst_past_capacity_is_refused_beyond_the_held_places(server_factory):
    # Four slots: four turns held, the other two refused at once; the held
    # ones speak their two sentences without a stall.
    runner = ToneRunner(step_seconds=0.005, max_slots=4, batch_sizes=(1, 2, 4), codes_per_char=1)
    server = await server_factory(runner=runner, max_active=8)
    turns = await burst(f"ws://127.0.0.1:{server.port}/v1/stream", 6, grace_s=10.0, seed=1)
    out = summarize(turns)
    assert (out["admitted"], out["refused"], out["unfinished"]) == (4, 2, 0)
    assert out["stalled"] == 0 and out["good"] == 4
