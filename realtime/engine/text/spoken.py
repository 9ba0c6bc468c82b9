"""A sentence as the model will read it: our rules, then upstream's clean-up.

``TextNormalizer.spoken(sentence, lang)`` is the one place text becomes
what the GPT reads. It composes

1. clean-up of what no rule should see: control and format characters,
   lone surrogates, the reserved prompt tags, a bracket that opens or closes
   no ``[tag]`` (upstream's tag splitter would drop the rest of the text);
2. our normalization (realtime/speech): numbers, money, dates, times,
   units, abbreviations, in English or Chinese, as ``(original, spoken)``
   pieces; a sentence no rule could touch skips the rules entirely;
3. upstream ChatTTS's ``Normalizer`` clean-up on each piece (what it does
   with no normalizer of its own registered): full-width punctuation for
   Chinese, its character map, homophones and the removal of characters the
   model has no tokens for.

Upstream's steps are per character, so applying them piece by piece gives
exactly the text applying them to the whole would; plain text (one piece)
is exactly what upstream's own normalizer makes of it. ``UpstreamCleanup``
applies upstream's own tables with ``str.translate`` instead of its numba
loop, which searches the 16,000-entry homophone table once per character
and a piece at a time cost ~1 ms a piece (tests/test_spoken.py checks the
two agree on generated text).

Thread: not thread-safe (upstream's normalizer keeps state); one owner, the
thread that prepares segments.
"""

from __future__ import annotations

import logging
import os
import re
import unicodedata
from dataclasses import dataclass

import realtime.engine.compat  # noqa: F401  (before ChatTTS)
from realtime.engine.api import RequestError
from realtime.engine.text.tokenizer import CHATTTS_TOKENS
from realtime.speech import lang as langs
from realtime.speech.normalize import TextTooLong, fold_width, pieces

log = logging.getLogger(__name__)

RESERVED_TAGS = ("[Stts]", "[spk_emb]", "[empty_spk]", "[Ptts]")
_TAG = re.compile(r"\[[\w_]+\]")
_BRACKET = re.compile(r"\[([\w_]+)\]|[\[\]]")
# The model's own control tags, which a client may write ("[uv_break]", "[laugh_1]").
_CONTROL_TAGS = frozenset(CHATTTS_TOKENS) - frozenset(RESERVED_TAGS)
# A reference mark a reader skips, not a link's text: "[1]", "[2, 5]", "[3–7]", "[a]",
# "[citation needed]", a Markdown footnote's "[^1]"; listed as unspoken.
# (No citation counts from zero: "x ∈ [0, 1]" is an interval, read.)
_CITATION = re.compile(r"\s*+\[(?:[1-9]\d{0,2}(?:\s?[,–-]\s?[1-9]\d{0,2}){0,8}|[a-z]|note\s\d{1,3}"
                       r"|\^[\w-]{1,20}|(?:citation|clarification)\sneeded)\](?!\()")
# HTML an LLM writes inside Markdown ("H<sub>2</sub>O", "<kbd>Ctrl</kbd>", "<br>"): the
# tags go, a block's leaves a space.
_HTML_TAG = re.compile(r"</?((sup|sub|b|i|u|em|strong|code|kbd|span|small|mark|s|del|ins|a|abbr)"
                       r"|br|p|div|li|ul|ol|tr|td|th|table|h[1-6]|hr|blockquote|pre)"
                       r"(?:\s++[\w:-]++=(?:\"[^\"<>]*+\"|'[^'<>]*+'|[^\s\"'<>]++))*+\s*+/?>", re.IGNORECASE)
# Markdown an LLM writes that a listener should not hear: a link's address
# ("[the docs](https://...)" reads "the docs") and a quote's marker ("> ").
_MARKDOWN_LINK = re.compile(r"\[([^\[\]]{1,200})\]\([^()\s]{0,2000}\)")
_QUOTE_MARKER = re.compile(r"^\s*(?:>\s*)*>\s+")
_CODE_FENCE = re.compile(r"^\s*+(?:```|~~~)[\w+#.-]*+\s*+$")  # "```python": a code block's fence
_TAG_OR_TEXT = re.compile(r"(\[[\w_]+\])|[^\[]+")
_UNSPOKEN = re.compile(r"[\s\W_]+", re.UNICODE)
# Letters and digits that are neither ASCII letters nor Han (which the model
# reads), with the spaces between them: what upstream's clean-up may drop.
_FOREIGN_RUN = re.compile(r"[^\W_A-Za-z\u4e00-\u9fff]+(?:\s+[^\W_A-Za-z\u4e00-\u9fff]+)*")
_WARM_UP = ("Warm up 1, 2 and 3: $4.50 at 10:30 on 2024-05-06, 25°C.",
            "预热一下，123，2024年5月6日10:30，6.3%。", "Plain words only.")


@dataclass(frozen=True)
class Spoken:
    """``text``: exactly what the model reads ("" when nothing speakable is
    left); ``lang``: "en" or "zh"; ``pieces``: (original span, spoken text)
    in order, covering the cleaned sentence, their spoken parts joined equal
    to ``text``; an untouched span is ``(s, s)`` before upstream's clean-up;
    ``unvoiced``: the reference marks skipped ("[1]"), then the runs of
    letters and digits in a sentence that says something which the model
    cannot say (another script: "안녕" in "朋友们안녕"), each in order, for
    ``done.unspoken``."""

    text: str
    lang: str
    pieces: tuple[tuple[str, str], ...]
    unvoiced: tuple[str, ...] = ()


def _clean_char(ch: str) -> str:
    cat = unicodedata.category(ch)
    if cat == "Cs":
        return ""  # a lone surrogate cannot even be encoded
    if cat == "Cc" or cat == "Cf" or cat == "Zl" or cat == "Zp":
        return " " if ch in "\t\n\r\x0b\x0c\u2028\u2029" else ""
    return ch


def clean(text: str) -> str:
    """What no rule should see removed: control characters, reserved tags,
    a Markdown link's address, a quote's marker, a code block's fence, HTML
    tags and reference marks; unmatched brackets become commas."""
    if not text.isprintable():
        text = "".join(_clean_char(ch) for ch in text)
    for tag in RESERVED_TAGS:
        text = text.replace(tag, "")
    if text.lstrip().startswith(">"):
        text = _QUOTE_MARKER.sub("", text)
    if "```" in text or "~~~" in text:
        text = _CODE_FENCE.sub("", text)
    if "<" in text:
        text = _strip_markup(text)
    if "[" in text or "]" in text:
        if "](" in text:
            text = _MARKDOWN_LINK.sub(r"\1", text)
        text = _BRACKET.sub(_bracket, _CITATION.sub("", text))
    return text.strip()


def _strip_markup(text: str) -> str:
    """HTML tags that mark text up go: those closed in the text ("<b>x</b>") and
    those touching a word ("H<sub>2", "one<br>two"). A tag written about, alone
    between spaces ("the <p> tag"), stays for the rules and upstream to read
    ("p"): dropping it would drop a word."""
    closed = {m.group(1).lower() for m in _HTML_TAG.finditer(text) if m.group(0).startswith("</")}

    def strip(m: re.Match[str]) -> str:
        s, e = m.start(), m.end()
        touching = s > 0 and not text[s - 1].isspace() or e < len(text) and not text[e].isspace()
        if m.group(1).lower() not in closed and not touching:
            return m.group(0)
        return "" if m.group(2) else " "  # inline: nothing; a block's: a space

    return _HTML_TAG.sub(strip, text)


def _bracket(m: re.Match[str]) -> str:
    """A control tag stays; any other bracket is a pause ("[sic]" reads ", sic,")."""
    if m.group(0) in _CONTROL_TAGS:
        return m.group(0)
    return "," + m.group(1) + "," if m.group(1) else ","


def citations(text: str) -> tuple[str, ...]:
    """The reference marks ``clean`` removes, as written ("[1]")."""
    return tuple(m.group(0).strip() for m in _CITATION.finditer(text)) if "[" in text else ()


def speakable(text: str) -> bool:
    return bool(_UNSPOKEN.sub("", _TAG.sub("", text)))


class UpstreamCleanup:
    """Upstream ``Normalizer.__call__(text, lang=lang)`` with nothing
    registered, from its own tables. Expects text whose every "[" opens a
    ``[tag]`` (``clean`` makes it so), as upstream's tag splitter would
    otherwise drop the rest."""

    def __init__(self, upstream) -> None:
        table = upstream.homophones_map  # [2, N] code points: from, to
        self.homophones = {int(a): int(b) for a, b in zip(table[0], table[1], strict=True)}
        self.half2full = upstream.halfwidth_2_fullwidth
        self.simplifier = upstream.character_simplifier
        self.reject = upstream.reject_pattern

    def unvoiced(self, text: str) -> tuple[str, ...]:
        """The runs of letters and digits in ``text`` that the clean-up
        removes (spaces inside a run kept): "Привет мир" in "Привет мир 好"."""
        runs: list[str] = []
        for m in _FOREIGN_RUN.finditer(_TAG.sub(" ", text)):  # "[laugh_1]" is said as it is
            run = m.group(0)
            kept = self.reject.sub("", run.translate(self.simplifier))
            if not any(ch.isalnum() for ch in kept):
                runs.append(run)
        return tuple(runs)

    def __call__(self, text: str, lang: str) -> str:
        if lang == "zh":
            text = text.translate(self.half2full)
        invalid = self.reject.search(_TAG.sub("", text)) is not None
        if invalid:
            text = text.translate(self.simplifier)
        text = text.translate(self.homophones)
        if invalid:
            text = _TAG_OR_TEXT.sub(lambda m: m.group(0) if m.group(1) else self.reject.sub("", m.group(0)),
                                    text)
        return text


class TextNormalizer:
    """Sentence in, ``Spoken`` out. Build once; ``warm_up`` before serving."""

    def __init__(self) -> None:
        import ChatTTS
        from ChatTTS.norm import Normalizer
        res = os.path.join(os.path.dirname(ChatTTS.__file__), "res", "homophones_map.json")
        self.upstream = Normalizer(res, logging.getLogger(__name__ + ".upstream"))
        self.cleanup = UpstreamCleanup(self.upstream)

    def warm_up(self) -> None:
        """Touch every reader once (imports, caches) before serving."""
        for sentence in _WARM_UP:
            self.spoken(sentence)

    def spoken(self, sentence: str, lang: str | None = None) -> Spoken:
        """The sentence as read. ``lang``: the hint for a sentence without
        letters of either script (None: English); one with letters decides
        for itself. Raises RequestError for text too long to normalize."""
        text = fold_width(clean(sentence))  # before the language is decided: "Ｈｅｌｌｏ" is English
        chosen = langs.decide(text, lang)
        try:
            raw = pieces(text, chosen)
        except TextTooLong as exc:
            raise RequestError(str(exc)) from None
        out = [(original, self._upstream(said, chosen)) for original, said in raw]
        out = _trimmed(out)
        said = "".join(s for _, s in out)
        if not speakable(said):
            return Spoken("", chosen, tuple((o, "") for o, _ in out))
        return Spoken(said, chosen, tuple(out),
                      citations(sentence) + self.cleanup.unvoiced("".join(s for _, s in raw)))

    def _upstream(self, text: str, lang: str) -> str:
        if not text:
            return text
        return self.cleanup(text, lang)


def _trimmed(out: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Strip the spoken text's outer whitespace, inside its first and last pieces."""
    nonempty = [i for i, (_, s) in enumerate(out) if s.strip()]
    if not nonempty:
        return [(o, "") for o, _ in out]
    first, last = nonempty[0], nonempty[-1]
    trimmed = []
    for i, (o, s) in enumerate(out):
        if i < first or i > last:
            s = ""
        else:
            s = s.lstrip() if i == first else s
            s = s.rstrip() if i == last else s
        trimmed.append((o, s))
    return trimmed
