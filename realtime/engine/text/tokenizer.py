"""ChatTTS's text tokenizer: load a checkpoint's, or generate a small one.

A real checkpoint ships a BERT WordPiece tokenizer (``asset/tokenizer``).
Random weights need one too, so ``generate_tokenizer`` builds a small
WordPiece vocabulary in memory: BERT's control tokens, ChatTTS's control
tokens ([Stts], [spk_emb], [Ptts], [speed_5], [uv_break], [laugh], ...),
ASCII letters, digits, punctuation and a band of common CJK characters.
The vocabulary is passed as a dict (``vocab=``), never as a file name:
some transformers releases silently ignore ``vocab_file=``.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

if TYPE_CHECKING:
    from transformers import BertTokenizerFast

log = logging.getLogger(__name__)

BERT_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHATTTS_TOKENS = (
    ["[Stts]", "[Ptts]", "[spk_emb]", "[empty_spk]", "[Sbreak]", "[Pbreak]", "[Ebreak]",
     "[uv_break]", "[v_break]", "[lbreak]", "[laugh]", "[music]", "[pure]"]
    + [f"[break_{i}]" for i in range(8)]
    + [f"[laugh_{i}]" for i in range(3)]
    + [f"[oral_{i}]" for i in range(10)]
    + [f"[speed_{i}]" for i in range(10)]
)
_PUNCTUATION = list(",.?!'\"-:;()，。、？！：；")
_CJK_BAND = 192  # the first characters of the CJK block: enough to tokenize test text


def _base_vocab() -> list[str]:
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    digits = [str(d) for d in range(10)]
    cjk = [chr(0x4E00 + i) for i in range(_CJK_BAND)]
    pieces = ["##" + c for c in letters + digits + cjk]
    words = ["the", "and", "hello", "world", "this", "is", "a", "test", "of", "to"]
    return BERT_TOKENS + letters + digits + _PUNCTUATION + cjk + pieces + words


def generate_tokenizer(max_vocab: int | None = None) -> BertTokenizerFast:
    from transformers import BertTokenizerFast

    """A WordPiece tokenizer holding ChatTTS's special tokens.

    ``max_vocab`` (the model's text vocabulary) bounds the size; raises
    ValueError when the special tokens alone do not fit.
    """
    vocab: dict[str, int] = {}
    for token in _base_vocab():
        vocab.setdefault(token, len(vocab))
    n_total = len(vocab) + len(CHATTTS_TOKENS)
    if max_vocab is not None and n_total > max_vocab:
        raise ValueError(f"tokenizer needs {n_total} ids, the model has {max_vocab}")
    core = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    core.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                 strip_accents=None, lowercase=True)
    core.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    fast = BertTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]",
                             cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                             do_lower_case=True)
    fast.add_special_tokens({"additional_special_tokens": CHATTTS_TOKENS})
    return fast


def load_tokenizer(path: str) -> Any:
    """Load a checkpoint's tokenizer directory: a ``LeanTokenizer`` where it
    encodes as ``BertTokenizerFast`` would (lean_tokenizer.py: no
    transformers import), else ``BertTokenizerFast``; raises OSError/ValueError."""
    from realtime.engine.text.lean_tokenizer import LeanTokenizer, load_full_tokenizer

    tok = LeanTokenizer.load(path) or load_full_tokenizer(path)
    missing = [t for t in ("[Stts]", "[spk_emb]", "[Ptts]")
               if tok.convert_tokens_to_ids(t) in (None, tok.unk_token_id)]
    if missing:
        raise ValueError(f"tokenizer in {path} lacks {', '.join(missing)}")
    return tok


def save_tokenizer(tok: BertTokenizerFast, path: str) -> None:
    os.makedirs(path, exist_ok=True)
    tok.save_pretrained(path)
