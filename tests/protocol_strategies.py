"""Hypothesis strategies for protocol messages, shared by the protocol tests."""

from __future__ import annotations

import functools
import lzma

import numpy as np
import pybase16384
from hypothesis import strategies as st

import protocol as p

# An offer with named voices and a small text limit, so both are exercised.
SMALL_OFFER = p.Offer(
    formats=("pcm_s16le", "pcm_mulaw"),
    sample_rates=(16000, 24000),
    voices=("alice", "bob", "seed:7"),
    max_text_chars=40,
)

ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-"
ids = st.text(alphabet=ID_ALPHABET, min_size=1, max_size=64)
u32 = st.integers(0, 2**32 - 1)
finite_ms = st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False)


@functools.cache
def speaker_embedding(seed: int = 0, dim: int = 768) -> str:
    """An encoded speaker string made the way ChatTTS makes one."""
    vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float16)
    packed = lzma.compress(
        vector.tobytes(),
        format=lzma.FORMAT_RAW,
        filters=[{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}],
    )
    return pybase16384.encode_to_string(packed)


def texts(offer: p.Offer | None) -> st.SearchStrategy[str]:
    limit = offer.max_text_chars if offer is not None else 200
    return st.text(max_size=min(limit, 200))


def voices(offer: p.Offer | None) -> st.SearchStrategy[str | None]:
    options = [
        st.none(),
        u32.map(lambda n: f"seed:{n}"),
        st.integers(0, 7).map(speaker_embedding),
        st.builds(lambda n, t: f"sample:{speaker_embedding(n, 64)}:{t}", st.integers(0, 3),
                  st.text(st.characters(min_codepoint=32, exclude_characters="\x7f", codec="utf-8"),
                          min_size=1, max_size=8)),
    ]
    if offer is not None and offer.voices:
        options.append(st.sampled_from(offer.voices))
    return st.one_of(options)


params = st.builds(
    p.Params,
    temperature=st.none() | st.floats(0, p.TEMPERATURE_MAX, exclude_min=True),
    top_p=st.none() | st.floats(0, p.TOP_P_MAX, exclude_min=True),
    top_k=st.none() | st.integers(1, p.TOP_K_MAX),
    repetition_penalty=st.none()
    | st.floats(p.REPETITION_PENALTY_MIN, p.REPETITION_PENALTY_MAX),
    seed=st.none() | u32,
    speed=st.none() | st.integers(p.SPEED_MIN, p.SPEED_MAX),
    refine=st.none() | st.booleans() | st.text(max_size=p.REFINE_PROMPT_MAX_CHARS)
    | st.builds(p.RefineLevels, *(st.none() | st.integers(low, high)
                                  for low, high in p.REFINE_LEVELS.values())),
    reference=st.none() | st.sampled_from(p.REFERENCES),
)


@st.composite
def speaks(draw, offer: p.Offer | None = p.DEFAULT_OFFER) -> p.Speak:
    lane = draw(st.sampled_from(offer.lanes if offer else p.LANES))
    deadline = draw(st.none() | st.integers(1, p.DEADLINE_MS_MAX))
    return p.Speak(
        id=draw(ids),
        text=draw(texts(offer)),
        final=draw(st.booleans()),
        lane=lane,
        deadline_ms=deadline if lane == "background" else None,
        voice=draw(voices(offer)),
        format=draw(st.sampled_from(offer.formats if offer else p.FORMATS)),
        sample_rate=draw(st.sampled_from(offer.sample_rates if offer else (8000, 24000, 96000))),
        frame_ms=draw(st.integers(p.FRAME_MS_MIN, p.FRAME_MS_MAX)),
        chunking=draw(st.sampled_from(offer.chunkings if offer else p.CHUNKINGS)),
        params=draw(params),
    )


def client_messages(offer: p.Offer | None = p.DEFAULT_OFFER) -> st.SearchStrategy:
    return st.one_of(
        speaks(offer),
        st.builds(p.Append, id=ids, text=texts(offer), final=st.booleans()),
        st.builds(p.Flush, id=ids),
        st.builds(p.Cancel, id=ids),
    )


timings = st.builds(
    p.Timing,
    queued_ms=finite_ms,
    first_audio_ms=st.none() | finite_ms,
    total_ms=finite_ms,
    rtf=st.none() | finite_ms,
)

server_messages = st.one_of(
    st.builds(
        p.Hello,
        sample_rate=st.integers(1, p.SAMPLE_RATE_MAX),
        formats=st.lists(st.text()).map(tuple),
        sample_rates=st.lists(st.integers(1, p.SAMPLE_RATE_MAX)).map(tuple),
        voices=st.lists(st.text()).map(tuple),
        limits=st.builds(p.Limits, *[st.integers(0, 2**63 - 1)] * 3),
        model=st.builds(
            p.ModelInfo,
            name=st.text(),
            weights=st.sampled_from(["checkpoint", "random", "tiny-random"]),
            device=st.sampled_from(["cuda", "cpu"]),
        ),
        protocol=st.just(p.PROTOCOL_VERSION),
    ),
    st.builds(
        p.Started,
        id=ids,
        stream=u32,
        lane=st.sampled_from(p.LANES),
        format=st.sampled_from(p.FORMATS),
        sample_rate=st.integers(1, p.SAMPLE_RATE_MAX),
    ),
    st.builds(
        p.Segment,
        id=ids,
        index=st.integers(0, 0xFFFF),
        text=st.text(),
        offset_ms=finite_ms,
        audio_ms=finite_ms,
    ),
    st.builds(
        p.Done,
        id=ids,
        audio_ms=finite_ms,
        segments=st.integers(0, 1000),
        timing=timings,
        deadline_met=st.none() | st.booleans(),
    ),
    st.builds(p.Cancelled, id=ids),
    st.builds(
        p.Error,
        id=st.none() | ids,
        code=st.sampled_from([c.value for c in p.ErrorCode]) | st.text(),
        message=st.text(),
        field=st.none() | st.sampled_from(["text", "params.top_k"]),
    ),
)

# Any JSON value (ints within 64 bits, as JSON libraries hold them).
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)
