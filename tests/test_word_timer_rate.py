"""realtime.server.stream.word_timing.WordTimer with token chunking: the words committed
before a segment's span is known carry their times at the rate, a word
followed by a pause ending before the next one starts."""

from __future__ import annotations

import orjson
import pytest

from realtime.server.stream.word_timing import WordTimer
from realtime.speech.timing import PRIOR_UNIT_MS, plan_words


class _Framer:
    sample_rate = 24000

    def __init__(self) -> None:
        self.samples_sent = 0
        self.segment_samples = 0

    def ms(self, samples: int) -> float:
        return samples * 1000 / self.sample_rate


@pytest.mark.parametrize("text", ["Well, this one pauses; twice, then: ends here now.",
                                  "word " * 20 + "end."])
def test_committed_words_are_at_the_rate_with_their_pauses(text):
    framer = _Framer()
    timer = WordTimer(framer, True)
    plan = plan_words(text)
    timer.opened(0, text, None)
    got: list[dict] = []
    for _ in range(1000):  # 10 ms pushes, never the last: every word but the last commits
        framer.samples_sent += 240
        framer.segment_samples += 240
        body = timer.pushed(framer.segment_samples)
        if body is not None:
            got += orjson.loads(b"{" + body)["words"]
    assert [w["word"] for w in got] == list(plan.words[:-1])
    for i, w in enumerate(got):
        assert w["start_ms"] == plan.starts[i] * PRIOR_UNIT_MS
        assert w["end_ms"] == (plan.starts[i] + plan.units[i]) * PRIOR_UNIT_MS
        gap = plan.starts[i + 1] - plan.starts[i] - plan.units[i]
        assert (w["end_ms"] < plan.starts[i + 1] * PRIOR_UNIT_MS) == (gap > 0)
