"""Prometheus metrics of one server, in its own registry.

Each ``Metrics`` owns a ``CollectorRegistry`` so several servers can live in
one process (tests, benches) without clashing names. Counters and histograms
are updated on the event loop; the worker thread only sets gauges (the
prometheus client is thread-safe).
"""

from __future__ import annotations

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

_LATENCY_BUCKETS = (0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0)
_STEP_BUCKETS = (0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.first_audio = Histogram(
            "chattts_first_audio_seconds",
            "Time from speak receipt to the first audio frame sent, per lane.",
            ["lane"], buckets=_LATENCY_BUCKETS, registry=r,
        )
        self.queue_depth = Gauge(
            "chattts_queue_depth", "Segment jobs waiting in the scheduler, per lane.",
            ["lane"], registry=r,
        )
        self.active_utterances = Gauge(
            "chattts_active_utterances", "Utterances accepted and not yet ended.", registry=r,
        )
        self.connections = Gauge(
            "chattts_connections", "Open WebSocket connections.", registry=r,
        )
        self.batch_size = Histogram(
            "chattts_batch_size", "Jobs per model step (real, not padded).",
            buckets=_BATCH_BUCKETS, registry=r,
        )
        self.step_seconds = Histogram(
            "chattts_step_seconds", "Measured time of one model step.",
            buckets=_STEP_BUCKETS, registry=r,
        )
        self.active_slots = Gauge(
            "chattts_active_slots", "KV cache slots held by jobs.", registry=r,
        )
        self.deadline_misses = Counter(
            "chattts_deadline_misses_total",
            "Background utterances that completed after their deadline.", registry=r,
        )
        self.errors = Counter(
            "chattts_errors_total", "Error messages sent, by code.", ["code"], registry=r,
        )
        self.audio_seconds = Counter(
            "chattts_audio_seconds_total", "Seconds of audio sent to clients.", registry=r,
        )
        self.utterances = Counter(
            "chattts_utterances_total", "Utterances ended, by outcome.", ["outcome"], registry=r,
        )
        self.interactive_streams = Gauge(
            "chattts_interactive_streams",
            "Interactive utterances admitted and still being synthesized, or accepted and "
            "awaiting their first sentence (they hold capacity).", registry=r,
        )
        self.interactive_capacity = Gauge(
            "chattts_interactive_capacity",
            "Interactive streams the model keeps in real time now (cost model, KV slots).",
            registry=r,
        )
        self.saturation = Gauge(
            "chattts_saturation",
            "Interactive streams over capacity; at 1 and above new interactive work is refused.",
            registry=r,
        )
        self.worker_restarts = Counter(
            "chattts_worker_restarts_total", "Times the model loop recovered from a crash.",
            registry=r,
        )
        for lane in ("interactive", "background"):
            self.queue_depth.labels(lane)
            self.first_audio.labels(lane)

    def render(self) -> bytes:
        return generate_latest(self.registry)
