"""The payload of an Opus frame: whole packets, each preceded by its length.

PROTOCOL.md's v1 additions: a binary frame of an ``opus`` utterance carries
one or more Opus packets (20 ms each), each preceded by its byte length as
u16 little-endian; the 12-byte frame header is unchanged.

Thread: pure functions, safe from any thread.
"""

from __future__ import annotations

import struct

_LENGTH = struct.Struct("<H")
MAX_PACKET_BYTES = 0xFFFF


def pack_packets(packets: list[bytes]) -> bytes:
    """One frame payload from ``packets`` (each 1..65535 bytes); ValueError otherwise."""
    for packet in packets:
        if not 0 < len(packet) <= MAX_PACKET_BYTES:
            raise ValueError(f"an Opus packet of {len(packet)} bytes cannot be framed")
    return b"".join(_LENGTH.pack(len(p)) + p for p in packets)


def unpack_packets(payload: bytes | bytearray | memoryview) -> list[bytes]:
    """The packets of one frame payload; ValueError when it is malformed
    (a length cut short, a zero length, or a packet running past the end)."""
    view = memoryview(payload).cast("B")
    packets: list[bytes] = []
    at = 0
    while at < len(view):
        if at + _LENGTH.size > len(view):
            raise ValueError("a packet length is cut short")
        (size,) = _LENGTH.unpack_from(view, at)
        at += _LENGTH.size
        if size == 0 or at + size > len(view):
            raise ValueError(f"a packet of {size} bytes does not fit the payload")
        packets.append(bytes(view[at:at + size]))
        at += size
    return packets
