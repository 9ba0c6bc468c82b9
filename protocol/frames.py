"""The binary audio frame: a 12-byte little-endian header, then samples.

Header layout (``struct`` format ``<BBHII``)::

    offset 0  u8   version   always FRAME_VERSION (1)
    offset 1  u8   flags     bit 0: last frame of its segment
                             bit 1: last frame of the utterance
    offset 2  u16  segment   segment index (0, 1, 2, ...)
    offset 4  u32  stream    the utterance's stream number from ``started``
    offset 8  u32  seq       frame number within the utterance (0, 1, 2, ...)

The payload (never empty) holds mono samples in the utterance's format.
Flag bits other than the two above are reserved: senders leave them 0,
receivers ignore them.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

HEADER = struct.Struct("<BBHII")
HEADER_SIZE = HEADER.size  # 12
FRAME_VERSION = 1
FLAG_SEGMENT_END = 1
FLAG_UTTERANCE_END = 2

_U8, _U16, _U32 = 0xFF, 0xFFFF, 0xFFFFFFFF


def _check(name: str, value: object, high: int) -> None:
    if type(value) is not int or not 0 <= value <= high:
        raise ValueError(f"frame header {name} must be an integer in 0..{high}, got {value!r}")


@dataclass(frozen=True, slots=True)
class FrameHeader:
    """One frame's header. Raises ValueError when a field is out of its range."""

    flags: int
    segment: int
    stream: int
    seq: int
    version: int = FRAME_VERSION

    def __post_init__(self) -> None:
        _check("flags", self.flags, _U8)
        _check("segment", self.segment, _U16)
        _check("stream", self.stream, _U32)
        _check("seq", self.seq, _U32)
        _check("version", self.version, _U8)

    @property
    def segment_end(self) -> bool:
        return bool(self.flags & FLAG_SEGMENT_END)

    @property
    def utterance_end(self) -> bool:
        return bool(self.flags & FLAG_UTTERANCE_END)


def pack_frame(header: FrameHeader, payload: bytes | bytearray | memoryview) -> bytes:
    """The bytes of one binary frame. Raises ValueError for an empty payload."""
    if memoryview(payload).nbytes == 0:
        raise ValueError("an audio frame's payload is never empty")
    head = HEADER.pack(header.version, header.flags, header.segment, header.stream, header.seq)
    return head + bytes(payload)


def unpack_frame(data: bytes | bytearray | memoryview) -> tuple[FrameHeader, memoryview]:
    """Split one binary frame into its header and a view of its payload.

    Raises ValueError when ``data`` is shorter than the header, has no
    payload, or carries a version other than FRAME_VERSION.
    """
    view = memoryview(data).cast("B")
    if len(view) <= HEADER_SIZE:
        raise ValueError(f"an audio frame is longer than {HEADER_SIZE} bytes, got {len(view)}")
    version, flags, segment, stream, seq = HEADER.unpack_from(view)
    if version != FRAME_VERSION:
        raise ValueError(f"unknown audio frame version {version}")
    return FrameHeader(flags, segment, stream, seq, version), view[HEADER_SIZE:]
