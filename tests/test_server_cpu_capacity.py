"""Admission on a CPU-like machine: a step's cost grows with its rows, so the
interactive lane's capacity is set by time, not by KV slots; the stream past it
is refused ``overloaded`` with a retry hint (PROTOCOL.md), not served late."""

from __future__ import annotations

import time

from test_server_overload import LONG, http_json

from protocol import Error, Started
from realtime.engine.tone import ToneRunner

BASE_S, PER_ROW_S = 0.006, 0.002  # 8 ms at batch 1, 14 at 4, 22 at 8: like 2 cores


class CpuLikeRunner(ToneRunner):
    """A tone runner whose steps cost what a CPU's do, and whose warm-up
    table says so (as the real runner's whole-step seed does)."""

    def __init__(self) -> None:
        super().__init__(max_slots=8, batch_sizes=(1, 2, 4, 8), codes_per_char=3.4)

    def step_cost(self, batch: int) -> float:
        return BASE_S + PER_ROW_S * batch

    def warmup(self) -> dict[tuple[int, int], float]:
        return {(b, k): self.step_cost(b) for b in self.batch_sizes for k in self.kv_buckets}

    def execute(self, plan):
        if not plan.jobs:
            return super().execute(plan)
        rows = min((b for b in self.batch_sizes if b >= len(plan.jobs)), default=len(plan.jobs))
        time.sleep(self.step_cost(rows))
        out = super().execute(plan)
        # The step's own cost, not the shared machine's oversleeping (nor the
        # loop's whole turn, which the worker takes for a measured step): the
        # cost model then keeps the capacity this test is about.
        out.seconds, out.nominal = self.step_cost(rows), True
        return out


async def test_the_stream_past_the_cpus_capacity_is_refused_with_a_retry_hint(server_factory,
                                                                              ws_connect):
    # Real time with the 30% headroom is a code every 16.4 ms per stream.
    # Three streams share a 14 ms step of 4 rows (a background job could ride
    # in its free row); a fourth fills the row, so the lane counts on 3 steps
    # in 4 (the starvation bound): 18.7 ms a code. KV slots are still free.
    server = await server_factory(runner=CpuLikeRunner(), max_active=8)
    load = await http_json(server.port, "/load")
    assert load["interactive"]["capacity"] == 3
    busy = await ws_connect(server)
    # All three at once: admitted on the cost model alone, before a loaded
    # machine's real clock could put the first behind real time.
    ids = [f"busy{k}" for k in range(3)]
    for msg_id in ids:
        await busy.send({"type": "speak", "id": msg_id, "text": LONG, "chunking": "token"})
    while any(busy.transcript(i).started is None and busy.transcript(i).terminal is None
              for i in ids):
        await busy.recv(timeout=10)
    for msg_id in ids:
        transcript = busy.transcript(msg_id)
        assert isinstance(transcript.started, Started), (msg_id, transcript.terminal)
    client = await ws_connect(server)
    late = await client.speak_and_collect("late", "Hello there.", timeout=5)
    assert isinstance(late.terminal, Error) and late.terminal.code == "overloaded"
    assert late.started is None and not late.frames
    # Retry when one of the streams ahead (seconds of audio each) is expected to end.
    assert 1_000 < late.terminal.retry_after_ms <= 30_000
    load = await http_json(server.port, "/load")
    assert load["saturated"] and load["interactive"]["streams"] == 3
    # The admitted streams are served to their end.
    done = await busy.collect(["busy0", "busy1", "busy2"], timeout=60)
    for transcript in done.values():
        transcript.check_done()


class SlowCpuRunner(CpuLikeRunner):
    """Slower than real time even alone: 30 ms a lone step, where real time
    with the headroom allows 16.4 ms a code."""

    def step_cost(self, batch: int) -> float:
        return 0.024 + 0.006 * batch


async def test_strict_admission_refuses_interactive_streams_a_slow_cpu_cannot_keep(server_factory,
                                                                                  ws_connect):
    server = await server_factory(runner=SlowCpuRunner(), max_active=8, admission="strict")
    load = await http_json(server.port, "/load")
    assert load["interactive"]["capacity"] == 0 and load["saturated"]
    client = await ws_connect(server)
    refused = await client.speak_and_collect("now", "Hello there.", timeout=5)
    assert isinstance(refused.terminal, Error) and refused.terminal.code == "overloaded"
    assert "real time" in refused.terminal.message and refused.started is None
    assert refused.terminal.retry_after_ms == 30_000
    # Background work is judged by its deadline, not a rate: it is served.
    narration = await client.speak_and_collect("later", "Hello there.", timeout=30,
                                               lane="background", deadline_ms=60_000)
    narration.check_done()


async def test_capacity_admission_serves_the_same_slow_cpu_one_stream(server_factory, ws_connect):
    server = await server_factory(runner=SlowCpuRunner(), max_active=8)
    load = await http_json(server.port, "/load")
    assert load["interactive"]["capacity"] >= 1
    client = await ws_connect(server)
    served = await client.speak_and_collect("now", "Hello there.", timeout=30)
    served.check_done()
