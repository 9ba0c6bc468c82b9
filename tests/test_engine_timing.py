"""Contenders timed against each other (realtime/engine/timing.py): the order
alternates every round, so a machine slowing down mid-measure charges both
alike; each figure is the median of its rounds, not the best or the mean."""

from __future__ import annotations

from realtime.engine.timing import alternating_medians, ms_per_call


def test_rounds_alternate_and_each_figure_is_its_median():
    order: list[str] = []
    figures = {"a": iter([5.0, 1.0, 9.0]), "b": iter([2.0, 2.0, 100.0])}

    def contender(name: str):
        def run() -> float:
            order.append(name)
            return next(figures[name])
        return run

    ms = alternating_medians({"a": contender("a"), "b": contender("b")}, 3)
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert ms == {"a": 5.0, "b": 2.0}


def test_ms_per_call_calls_the_run_each_time_and_divides():
    calls = []
    timed = ms_per_call(lambda: calls.append(1), 4)
    first = timed()
    assert len(calls) == 4 and 0 <= first < 1000
    timed()
    assert len(calls) == 8
