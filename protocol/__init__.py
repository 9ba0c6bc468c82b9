"""Protocol v1 of the realtime TTS server, sans I/O.

Parsing, validation and encoding of the JSON messages (``codec``), the binary
audio frame header (``frames``), the sample formats (``pcm``) and the
ordering rules of an utterance's messages (``stream``: a state machine for
the sending server and one for a receiving client). Nothing in
this package imports asyncio, websockets, uvloop or torch: the server and the
clients move bytes, this package gives them meaning. docs/protocol.md is the
contract in prose.
"""

from protocol.codec import (
    DEFAULT_MAX_TEXT_CHARS,
    DEFAULT_OFFER,
    DEFAULT_SAMPLE_RATES,
    Offer,
    decode_client,
    encode,
    load_object,
)
from protocol.errors import NON_TERMINAL_CODES, ErrorCode, ProtocolError
from protocol.frames import (
    FLAG_SEGMENT_END,
    FLAG_UTTERANCE_END,
    FRAME_VERSION,
    HEADER,
    HEADER_SIZE,
    FrameHeader,
    pack_frame,
    unpack_frame,
)
from protocol.messages import (
    ALL_FORMATS,
    CHUNKINGS,
    CLIENT_TYPES,
    DEADLINE_MS_MAX,
    DEFAULT_CHUNKING,
    DEFAULT_FORMAT,
    DEFAULT_FRAME_MS,
    DEFAULT_LANE,
    DEFAULT_SAMPLE_RATE,
    FORMATS,
    FRAME_MS_MAX,
    FRAME_MS_MIN,
    ID_MAX_CHARS,
    ID_PATTERN,
    LANES,
    OPUS_FORMAT,
    OPUS_PACKET_MS,
    OPUS_SAMPLE_RATES,
    PROTOCOL_VERSION,
    SAMPLE_RATE_MAX,
    SERVER_TYPES,
    Append,
    Cancel,
    Cancelled,
    ClientMessage,
    Done,
    Error,
    Flush,
    Hello,
    Limits,
    ModelInfo,
    Segment,
    ServerMessage,
    Speak,
    Started,
    Timing,
    is_valid_id,
)
from protocol.params import (
    DEFAULT_SPEED,
    REFERENCES,
    REFINE_LEVELS,
    REFINE_PROMPT_MAX_CHARS,
    REPETITION_PENALTY_MAX,
    REPETITION_PENALTY_MIN,
    SEED_MAX,
    SPEED_MAX,
    SPEED_MIN,
    TEMPERATURE_MAX,
    TOP_K_MAX,
    TOP_P_MAX,
    Params,
    RefineLevels,
)
from protocol.pcm import BYTES_PER_SAMPLE, decode_samples, encode_samples
from protocol.server_codec import decode_server
from protocol.voices import VoiceKind, is_embedding, seed_of, voice_kind
from protocol.words import (
    PING_DATA_MAX_CHARS,
    WORD_METHODS,
    Flushed,
    Ping,
    Pong,
    TimedWords,
    Words,
    WordStart,
    WordTiming,
)

__all__ = [
    # messages
    "PROTOCOL_VERSION", "DEFAULT_SAMPLE_RATE", "FORMATS", "LANES", "CHUNKINGS",
    "DEFAULT_FORMAT", "DEFAULT_LANE", "DEFAULT_CHUNKING", "DEFAULT_FRAME_MS",
    "FRAME_MS_MIN", "FRAME_MS_MAX", "ID_MAX_CHARS", "ID_PATTERN", "DEADLINE_MS_MAX",
    "SAMPLE_RATE_MAX", "SEED_MAX", "TEMPERATURE_MAX", "TOP_P_MAX", "TOP_K_MAX",
    "REPETITION_PENALTY_MIN", "REPETITION_PENALTY_MAX", "CLIENT_TYPES", "SERVER_TYPES",
    "is_valid_id", "Params", "Speak", "Append", "Flush", "Cancel", "Limits", "ModelInfo",
    "Hello", "Started", "Segment", "Timing", "Done", "Cancelled", "Error",
    "ClientMessage", "ServerMessage", "ALL_FORMATS", "OPUS_FORMAT", "OPUS_SAMPLE_RATES",
    "OPUS_PACKET_MS",
    # params
    "SPEED_MIN", "SPEED_MAX", "DEFAULT_SPEED", "REFINE_LEVELS", "REFINE_PROMPT_MAX_CHARS",
    "REFERENCES", "RefineLevels",
    # voice-agent additions
    "Words", "TimedWords", "WordTiming", "WordStart", "WORD_METHODS", "Flushed", "Ping", "Pong",
    "PING_DATA_MAX_CHARS",
    # errors
    "ErrorCode", "ProtocolError", "NON_TERMINAL_CODES",
    # codec
    "Offer", "DEFAULT_OFFER", "DEFAULT_MAX_TEXT_CHARS", "DEFAULT_SAMPLE_RATES",
    "decode_client", "decode_server", "encode", "load_object",
    # voices
    "VoiceKind", "voice_kind", "seed_of", "is_embedding",
    # frames
    "HEADER", "HEADER_SIZE", "FRAME_VERSION", "FLAG_SEGMENT_END", "FLAG_UTTERANCE_END",
    "FrameHeader", "pack_frame", "unpack_frame",
    # pcm
    "BYTES_PER_SAMPLE", "encode_samples", "decode_samples",
]
