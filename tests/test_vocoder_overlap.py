"""Audio one step later (realtime/engine/vocoder/overlap.py), on the CPU.

The delayed path runs here exactly as on CUDA, with the stream and the event
stood in. The same jobs run with the overlap off and on: every step's audio
of the overlapped runner is, bit for bit, what the synchronous runner
delivered one step earlier (the windows asked at a step are the same in both
modes: the previous step's are completed before a stream is asked again),
jobs end one step later, nothing is lost at an utterance's end, and a job
released (cancelled) with audio in flight gets none of it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from runtime_fixtures import TEXTS, Driver, FrozenClock, request, tiny_runner

from realtime.engine.vocoder.overlap import HostBuffer, overlap_for
from realtime.engine.vocoder.stream import audio_samples

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SHAPES = dict(max_slots=6, batch_sizes=(1, 2, 4, 8), kv_buckets=(128,))


def _runner(overlap: str):
    runner = tiny_runner(vocoder_overlap=overlap, **SHAPES)
    runner.vocoder.clock = FrozenClock()  # chunks on the schedule alone in both runs
    assert runner.audio.delivery.delayed == (overlap == "on")
    return runner


def _jobs(d: Driver) -> None:
    """Streams beside one-shots, of different lengths, all from the start."""
    d.add(1, request(TEXTS[0], streaming=True, seed=1, min_new_tokens=40, max_new_tokens=40))
    d.add(2, request(TEXTS[1], streaming=False, seed=2, min_new_tokens=13, max_new_tokens=13))
    d.add(3, request(TEXTS[2], streaming=True, seed=3, min_new_tokens=9, max_new_tokens=9))
    d.add(4, request(TEXTS[3], streaming=False, seed=4, min_new_tokens=30, max_new_tokens=30))
    d.add(5, request(TEXTS[2], streaming=True, seed=5, min_new_tokens=25, max_new_tokens=25))


def _run(overlap: str, cancel_at: int | None = None, budget: int | None = None):
    """Every step's output; job 5 released at step ``cancel_at``."""
    runner = _runner(overlap)
    if budget is not None:
        runner.audio.steps_per_call = budget
    d = Driver(runner)
    _jobs(d)
    outs = []
    for k in range(200):
        if not (d.live or d.pending):
            break
        release = (5,) if k == cancel_at and 5 in d.live else ()
        outs.append(d.step(release=release))
    assert not runner.jobs and not runner.audio.delivery.pending
    return runner, d, outs


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[j], b[j]) for j in a)


@pytest.mark.parametrize("budget", [None, 40])  # 40: one-shot finals spread over steps
def test_each_steps_audio_is_the_synchronous_runners_one_step_later(budget):
    _, sync_d, sync = _run("off", budget=budget)
    _, late_d, late = _run("on", budget=budget)
    assert len(late) == len(sync) + 1  # the last audio needs one more step
    assert not late[0].audio and not late[0].finished
    for k, out in enumerate(sync):
        assert _same(late[k + 1].audio, out.audio), k
        assert sorted(late[k + 1].finished) == sorted(out.finished), k
    assert sorted(late_d.finished) == sorted(sync_d.finished) == [1, 2, 3, 4, 5]
    for j in late_d.finished:
        assert late_d.tokens[j] == sync_d.tokens[j]


def test_nothing_is_lost_at_an_utterances_end():
    runner, d, _ = _run("on")
    for j in (1, 3, 5):  # streams: exactly the one-shot length, in order
        assert sum(len(c) for c in d.audio[j]) == audio_samples(d.tokens[j])
    for j in (2, 4):  # one-shots: one piece, the one-shot render
        (piece,) = [c for c in d.audio[j] if len(c)]
        ref = runner.vocoder.one_shot(d.hidden[j])
        assert piece.shape == ref.shape and np.abs(piece - ref).max() <= 1e-6


def test_a_job_released_with_audio_in_flight_gets_none_of_it():
    _, _, full = _run("off")
    k = [i for i, out in enumerate(full) if len(out.audio.get(5, ()))][1]  # its second chunk
    _, sync_d, sync = _run("off", cancel_at=k + 1)
    _, late_d, late = _run("on", cancel_at=k + 1)
    # The chunk launched in step k lands in step k + 1, the release's: dropped.
    assert 5 in late[k].tokens and 5 not in late[k + 1].audio and 5 not in late_d.finished
    delivered = sum(len(c) for c in late_d.audio[5])
    assert delivered == sum(len(c) for c in sync_d.audio[5]) - len(sync[k].audio[5]) > 0
    # The others are untouched by the release.
    for i, out in enumerate(sync):
        rest = {j: a for j, a in out.audio.items() if j != 5}
        assert _same({j: a for j, a in late[i + 1].audio.items() if j != 5}, rest), i
    assert sorted(late_d.finished) == [1, 2, 3, 4]


def test_reset_drops_what_is_in_flight():
    runner = _runner("on")
    d = Driver(runner)
    _jobs(d)
    for _ in range(12):
        d.step()
    assert runner.audio.delivery.pending
    runner.reset()
    assert not runner.audio.delivery.pending
    d2 = Driver(runner)
    d2.add(7, request(TEXTS[0], seed=7, min_new_tokens=5, max_new_tokens=5))
    out = d2.step()
    assert not out.audio  # nothing of the jobs before the reset


def test_overlap_is_on_for_cuda_only_unless_asked():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert overlap_for("auto", cuda) and not overlap_for("auto", cpu)
    assert overlap_for("on", cpu) and not overlap_for("off", cuda)
    with pytest.raises(ValueError, match="unknown vocoder overlap"):
        overlap_for("later", cpu)


def test_the_host_buffer_grows_and_is_reused():
    buf = HostBuffer(pinned=False)
    a = buf.take(100)
    b = buf.take(60)
    assert a.data_ptr() == b.data_ptr() and b.shape == (60,)
    c = buf.take(150)
    assert c.shape == (150,) and buf.take(200).shape == (200,)


class _FakeCuda:
    """torch.cuda's stream API as the lane uses it, logging the order of calls."""

    def __init__(self, log):
        self.log = log
        fake = self

        class Stream:
            def __init__(self, device):
                self.device = device

            def wait_stream(self, other):
                fake.log.append(("wait", other))

            def record_event(self):
                fake.log.append("record")
                return fake.Event()

        class Event:
            def synchronize(self):
                fake.log.append("sync")

        self.Stream, self.Event = Stream, Event

    def current_stream(self, device):
        return "model stream"

    def stream(self, stream):
        import contextlib

        @contextlib.contextmanager
        def on():
            self.log.append("enter")
            yield
            self.log.append("exit")
        return on()


def test_on_cuda_the_call_waits_for_the_model_stream_and_is_collected_after_its_event(monkeypatch):
    """The CUDA lane's order, with torch.cuda's stream API stood in: the
    lane waits for the model stream, the packed call and its copy back are
    issued on it, an event follows; nothing waits until the next step's
    collect, which synchronizes on that event before completing a stream."""
    from realtime.engine.vocoder import overlap as vocoder_overlap
    from realtime.engine.vocoder.batch import Due

    log: list = []
    fake = _FakeCuda(log)
    for name in ("Stream", "current_stream", "stream"):
        monkeypatch.setattr(torch.cuda, name, getattr(fake, name))
    real = vocoder_overlap.packed_on_device
    monkeypatch.setattr(vocoder_overlap, "packed_on_device",
                        lambda v, hs: log.append("render") or real(v, hs))
    runner = _runner("off")
    delivery = vocoder_overlap.AudioDelivery(runner.vocoder, torch.device("cuda"), True,
                                             lambda exc: False)
    stream = runner.vocoder.start()
    stream.append(torch.randn(30, runner.shape.hidden))
    completed = []
    real_complete = stream.complete
    monkeypatch.setattr(stream, "complete", lambda w, a: completed.append(len(log)) or real_complete(w, a))
    delivery.launch([Due(1, stream.windows(final=True), stream, True)], 2048)
    assert log == [("wait", "model stream"), "enter", "render", "record", "exit"]
    assert not completed and delivery.pending
    done = delivery.collect(lambda j: True)
    assert log[5:] == ["sync"] and completed == [6, 6]  # two windows, after the event passed
    assert done.ended == [1] and len(done.audio[1]) == audio_samples(30)
