"""The server's one frozen configuration, built from flags and environment.

Every flag ``--some-flag`` can also be set with the environment variable
``CHATTTS_RT_SOME_FLAG``; a flag on the command line wins over the
environment, which wins over the default. Repeatable flags (``--auth-token``,
``--allowed-origin``) take a comma-separated list from the environment.
Integer lists (``--batch-sizes``, ``--kv-buckets``) are comma-separated in both.

``ServerConfig`` never shows auth tokens in its repr, so logging the config
never leaks them.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from realtime.engine.api import (
    CPU_ENGINES,
    EOS_READS,
    PRECISIONS,
    VOCODER_OVERLAPS,
    VOCODER_PRECISIONS,
    RuntimeOptions,
)
from realtime.engine.model.prepared_cache import default_cache_dir
from realtime.server.voices.file import read_voices_file
from scheduler import ADMISSION_MODES

ENV_PREFIX = "CHATTTS_RT_"
SHAPE_FIELDS = ("batch_sizes", "kv_buckets", "max_slots")

WEIGHT_CHOICES_HELP = (
    "auto | random | tiny-random | tone | PATH (checkpoint directory). "
    "'tone' runs no model at all: a synthetic tone runner for load tests and benches."
)


_ENGINE = RuntimeOptions()


class ConfigError(ValueError):
    """A flag or environment variable has a value the server cannot use."""


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    # The engine's settings, under RuntimeOptions' names and defaults (runtime_options).
    weights: str = _ENGINE.weights
    model_dir: str | None = _ENGINE.model_dir
    require_weights: bool = _ENGINE.require_weights
    device: str = _ENGINE.device
    precision: str = _ENGINE.precision
    cpu_engine: str = _ENGINE.cpu_engine
    cpu_threads: int = _ENGINE.cpu_threads
    record_steps: str | None = _ENGINE.record_steps
    batch_sizes: tuple[int, ...] = _ENGINE.batch_sizes
    kv_buckets: tuple[int, ...] = _ENGINE.kv_buckets
    max_slots: int = _ENGINE.max_slots
    lookahead_steps: int = _ENGINE.lookahead_steps
    vocoder_overlap: str = _ENGINE.vocoder_overlap
    vocoder_precision: str = _ENGINE.vocoder_precision
    eos_read: str = _ENGINE.eos_read
    interactive_batch_size: int = 1
    voices_file: str | None = None
    auth_tokens: tuple[str, ...] = field(default=(), repr=False)
    allowed_origins: tuple[str, ...] = ()
    max_text_chars: int = 5000
    max_active: int = 8
    text_chars_per_minute: int = 30000  # per connection; 0 = unlimited
    token_text_chars_per_minute: int = 120000  # per auth token, all its connections
    token_max_active: int = 64  # active utterances per auth token
    max_message_bytes: int = 65536
    max_connections: int = 2000
    default_deadline_ms: int = 60000
    # The refine pass for background speaks that leave params.refine out (it
    # costs first audio a text pass, which the interactive lane cannot spare).
    refine_background: bool = False
    drain_timeout: float = 30.0
    send_queue_bytes: int = 8 * 1024 * 1024
    # Long enough for a voice agent's pauses between turns (a user thinking,
    # a tool call, a hold) without keepalives; short enough that sockets of
    # clients that vanished behind a NAT free their slot within minutes.
    idle_timeout: float = 300.0
    # A connection's first request (a WebSocket handshake, an HTTP head and body) must be in by then.
    handshake_timeout: float = 10.0
    log_level: str = "info"
    log_json: bool = False
    # Only for ``--weights tone``: seconds the synthetic runner spends per step.
    tone_step_ms: float = 0.0
    tone_codes_per_step: int = 1
    web_root: str | None = None
    # Start-up work kept per machine (step costs, the GEMM plan, prepared weights); "" = off.
    cache_dir: str = field(default_factory=default_cache_dir)
    disable_speech_api: bool = False  # no POST /v1/audio/speech (WebSocket and GETs only)
    # Admission under overload (docs/scheduler.md): "capacity", "strict" or "queue-only".
    admission: str = "capacity"
    interactive_first_audio_ms: float = 0.0  # 0: derived from the cost model
    # A streamed utterance accepted before its first sentence holds capacity this long.
    stream_reservation_s: float = 10.0
    tone_codes_per_char: float = 1.0  # --weights tone: segment length per character
    # Shape fields no flag or variable set: on CUDA the hardware profile picks them.
    auto_shapes: tuple[str, ...] = SHAPE_FIELDS

    @property
    def auth_required(self) -> bool:
        return bool(self.auth_tokens)

    def runtime_options(self) -> RuntimeOptions:
        """The part of the config the engine needs: each ``RuntimeOptions``
        field this config has, by name; the voices file read and resolved
        (ValueError when it is unreadable or bad)."""
        mine = {f.name for f in fields(self)}
        shared = {f.name: getattr(self, f.name) for f in fields(RuntimeOptions) if f.name in mine}
        shared["voices"] = read_voices_file(self.voices_file) if self.voices_file else ()
        shared["cache_dir"] = self.cache_dir or None
        return RuntimeOptions(**shared)

    def summary(self) -> dict[str, object]:
        """Everything worth logging at start-up; tokens reduced to a count."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "auth_tokens"}
        out["auth_tokens"] = len(self.auth_tokens)
        return out


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return tuple(sorted(set(values)))


def _str_list(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off", ""):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean, got {text!r}")


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


# (flag, dest, type, help). Booleans are store_true flags on the command line.
_OPTIONS: tuple[tuple[str, str, Callable[[str], Any], str], ...] = (
    ("--host", "host", str, "address to bind"),
    ("--port", "port", int, "TCP port (0 picks a free one)"),
    ("--weights", "weights", str, WEIGHT_CHOICES_HELP),
    ("--model-dir", "model_dir", str, "ChatTTS checkpoint directory for --weights auto"),
    ("--require-weights", "require_weights", bool, "refuse to start without real weights"),
    ("--device", "device", str, "auto | cpu | cuda"),
    ("--precision", "precision", str,
     "auto | fp32 | bf16 | fp16 | int8 | int4 (auto: bf16/fp16 on CUDA, int8 or int4 on a CPU, "
     "measured; int8 and int4: CPU only, the decoder's matrices in int8/int4 on ONNX Runtime; "
     "bf16: CUDA only)"),
    ("--cpu-engine", "cpu_engine", str,
     "auto | ort | torch: what runs the decoder on a CPU (ort: ONNX Runtime, int4/int8/fp32; "
     "torch: our decoder, fp32 codes identical to upstream's; auto: measured once per machine)"),
    ("--cpu-threads", "cpu_threads", _non_negative_int,
     "torch intra-op threads on CPU (0: torch's count, at most the usable CPUs)"),
    ("--record-steps", "record_steps", str,
     "append every segment request and step plan to this file (JSON lines, for replay)"),
    ("--batch-sizes", "batch_sizes", _int_list, "decode batch sizes to prepare, e.g. 1,2,4,8"),
    ("--kv-buckets", "kv_buckets", _int_list, "KV length buckets, e.g. 256,512,1024,2048"),
    ("--max-slots", "max_slots", _positive_int, "KV cache slots (jobs in flight)"),
    ("--interactive-batch-size", "interactive_batch_size", _positive_int,
     "batch size of the interactive lane"),
    ("--lookahead-steps", "lookahead_steps", _positive_int, "streaming vocoder right context"),
    ("--vocoder-overlap", "vocoder_overlap", str,
     "auto | on | off: vocoder on its own CUDA stream, audio one step later (auto: CUDA only)"),
    ("--vocoder-precision", "vocoder_precision", str,
     "auto | fp32 | tf32 | bf16 | int8: the vocoder's block linears (auto: tf32 on CUDA, else fp32; "
     "int8: CPU, the ort engine's vocoder)"),
    ("--eos-read", "eos_read", str,
     "auto | deferred | blocking: a step's EOS flags read one step later (auto: CUDA only)"),
    ("--voices-file", "voices_file", str, "JSON file of named voices"),
    ("--auth-token", "auth_tokens", str, "accepted bearer token (repeatable)"),
    ("--allowed-origin", "allowed_origins", str, "allowed Origin header (repeatable)"),
    ("--max-text-chars", "max_text_chars", _positive_int, "text limit of one utterance"),
    ("--max-active", "max_active", _positive_int, "active utterances per connection"),
    ("--text-chars-per-minute", "text_chars_per_minute", _non_negative_int,
     "text characters per minute per connection (0: unlimited)"),
    ("--token-text-chars-per-minute", "token_text_chars_per_minute", _non_negative_int,
     "text characters per minute per auth token (0: unlimited)"),
    ("--token-max-active", "token_max_active", _non_negative_int,
     "active utterances per auth token, all connections (0: unlimited)"),
    ("--max-message-bytes", "max_message_bytes", _positive_int, "largest client message"),
    ("--max-connections", "max_connections", _positive_int, "open WebSocket connections"),
    ("--default-deadline-ms", "default_deadline_ms", _positive_int,
     "background deadline when a speak gives none"),
    ("--refine-background", "refine_background", bool,
     "run the refine-text pass for background speaks that leave params.refine out"),
    ("--drain-timeout", "drain_timeout", _non_negative_float,
     "seconds in-flight utterances get to finish on SIGTERM"),
    ("--send-queue-bytes", "send_queue_bytes", _positive_int,
     "per-connection send queue bound before slow_consumer"),
    ("--idle-timeout", "idle_timeout", _non_negative_float,
     "close connections with no active utterance and no client message for this many "
     "seconds, code 1000 (0: never; a ping message keeps one open)"),
    ("--handshake-timeout", "handshake_timeout", _positive_float,
     "seconds a new connection has to send its handshake or its whole HTTP request"),
    ("--log-level", "log_level", str, "debug | info | warning | error"),
    ("--log-json", "log_json", bool, "one JSON object per log line"),
    ("--tone-step-ms", "tone_step_ms", _non_negative_float,
     "step time of the synthetic runner (--weights tone)"),
    ("--tone-codes-per-step", "tone_codes_per_step", _positive_int,
     "codes per step of the synthetic runner (--weights tone; benches)"),
    ("--web-root", "web_root", str, "directory served at / (default: clients/web)"),
    ("--cache-dir", "cache_dir", str,
     "directory for start-up work kept per machine: step costs, GEMM plan, prepared weights "
     "(default $XDG_CACHE_HOME/realtime-tts or ~/.cache/realtime-tts; '' turns it off)"),
    ("--disable-speech-api", "disable_speech_api", bool,
     "serve no OpenAI-compatible POST /v1/audio/speech on the port"),
    ("--admission", "admission", str,
     "capacity (refuse interactive work the model cannot start in time or keep real time; "
     "a machine slower than real time still serves its best) | strict (the same, but such "
     "a machine refuses every interactive stream) | queue-only (refuse only when a queue is full)"),
    ("--interactive-first-audio-ms", "interactive_first_audio_ms", _non_negative_float,
     "first-audio budget of an interactive utterance (0: derived from the cost model)"),
    ("--stream-reservation-s", "stream_reservation_s", _non_negative_float,
     "an interactive utterance accepted before its first sentence counts against capacity "
     "until it comes, for at most this long (0: not until it comes)"),
    ("--tone-codes-per-char", "tone_codes_per_char", _non_negative_float,
     "codes per text character of the synthetic runner (--weights tone; benches)"),
)

_REPEATABLE = {"auth_tokens", "allowed_origins"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chattts-realtime",
        description="Streaming WebSocket TTS server around ChatTTS. "
        f"Every flag can also be set as {ENV_PREFIX}<FLAG_IN_UPPER_SNAKE>.",
    )
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the server (the default command)")
    sub.add_parser("normalize", add_help=False,
                   help="print TEXT as the model will read it, one segment a line "
                        "(normalize --help)")
    for p in (parser, serve):
        _add_options(p)
    return parser


def _add_options(parser: argparse.ArgumentParser) -> None:
    for flag, dest, kind, help_text in _OPTIONS:
        env = ENV_PREFIX + flag[2:].upper().replace("-", "_")
        help_text = f"{help_text} [env {env}]"
        if kind is bool:
            parser.add_argument(flag, dest=dest, action="store_true", default=None, help=help_text)
        elif dest in _REPEATABLE:
            parser.add_argument(flag, dest=dest, action="append", default=None, help=help_text)
        else:
            parser.add_argument(flag, dest=dest, type=kind, default=None, help=help_text)


def _from_env(environ: Mapping[str, str]) -> dict[str, object]:
    values: dict[str, object] = {}
    for flag, dest, kind, _ in _OPTIONS:
        env = ENV_PREFIX + flag[2:].upper().replace("-", "_")
        raw = environ.get(env)
        if raw is None:
            continue
        try:
            if kind is bool:
                values[dest] = _bool(raw)
            elif dest in _REPEATABLE:
                values[dest] = _str_list(raw)
            else:
                values[dest] = kind(raw)
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise ConfigError(f"{env}: {exc}") from None
    return values


def load_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> tuple[str, ServerConfig]:
    """Parse ``argv`` (without the program name) and ``environ``.

    Returns ``(command, config)``; the command is ``"serve"`` when none is
    given. Raises ``SystemExit`` for bad flags (argparse) and ``ConfigError``
    for bad environment values or inconsistent settings.
    """
    environ = os.environ if environ is None else environ
    args = build_parser().parse_args(list(argv or []))
    values = _from_env(environ)
    for _, dest, _, _ in _OPTIONS:
        given = getattr(args, dest, None)
        if given is not None:
            values[dest] = given
    for dest in _REPEATABLE:
        if dest in values:
            values[dest] = tuple(v for v in values[dest] if v)  # type: ignore[attr-defined]
    values["auto_shapes"] = tuple(f for f in SHAPE_FIELDS if f not in values)
    config = ServerConfig(**values)  # type: ignore[arg-type]
    validate(config)
    return args.command or "serve", config


def validate(config: ServerConfig) -> None:
    """Raise ``ConfigError`` for values that parse but cannot work together."""
    if config.device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"--device must be auto, cpu or cuda, not {config.device!r}")
    if config.precision not in PRECISIONS:
        raise ConfigError(f"--precision must be one of {', '.join(PRECISIONS)}, "
                          f"not {config.precision!r}")
    if config.precision in ("int8", "int4") and config.device == "cuda":
        raise ConfigError(f"--precision {config.precision} is a CPU mode; with --device cuda use auto, "
                          "bf16 or fp16")
    if config.precision == "bf16" and config.device == "cpu":
        raise ConfigError("--precision bf16 is a CUDA mode; with --device cpu use auto, int8, int4 or fp32")
    if config.cpu_engine not in CPU_ENGINES:
        raise ConfigError(f"--cpu-engine must be one of {', '.join(CPU_ENGINES)}, not {config.cpu_engine!r}")
    for flag, value, choices in (("--vocoder-overlap", config.vocoder_overlap, VOCODER_OVERLAPS),
                                 ("--vocoder-precision", config.vocoder_precision, VOCODER_PRECISIONS),
                                 ("--eos-read", config.eos_read, EOS_READS)):
        if value not in choices:
            raise ConfigError(f"{flag} must be one of {', '.join(choices)}, not {value!r}")
    if config.vocoder_precision == "tf32" and config.device == "cpu":
        raise ConfigError("--vocoder-precision tf32 is a CUDA mode; on the CPU use fp32, bf16 or int8")
    if config.vocoder_precision == "int8" and config.device == "cuda":
        raise ConfigError("--vocoder-precision int8 is a CPU mode; on CUDA use auto, tf32 or bf16")
    if config.log_level.lower() not in ("debug", "info", "warning", "error", "critical"):
        raise ConfigError(f"--log-level {config.log_level!r} is not a logging level")
    if not 0 <= config.port <= 65535:
        raise ConfigError(f"--port {config.port} is out of range")
    if config.interactive_batch_size > max(config.batch_sizes):
        raise ConfigError("--interactive-batch-size is larger than every --batch-sizes entry")
    if config.max_slots < 2:
        raise ConfigError("--max-slots must be at least 2 (one is kept for the interactive lane)")
    if config.admission not in ADMISSION_MODES:
        raise ConfigError(f"--admission must be one of {', '.join(ADMISSION_MODES)}, "
                          f"not {config.admission!r}")
    if config.weights == "tone" and not config.tone_codes_per_char > 0:
        raise ConfigError("--tone-codes-per-char must be > 0")
