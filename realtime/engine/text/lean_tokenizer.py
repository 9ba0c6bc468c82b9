"""A checkpoint's tokenizer through ``tokenizers`` alone: no transformers import.

``import transformers`` (for ``BertTokenizerFast``) was the largest import
of a warm start: it pulls ``torch.distributed.tensor``, sympy, PIL and jinja2
(about 2.5 s on a quiet 2-core Xeon, 6 s under load), while the serving path
only encodes prompts and looks up a few token ids. ``BertTokenizerFast`` is
itself a wrapper over the ``tokenizers`` object stored in ``tokenizer.json``;
``LeanTokenizer`` wraps the same object and answers what the runtime asks
in the same way:

- ``tok(text, add_special_tokens=..., return_tensors=None | "pt")`` for one
  string: the backend's ``encode(...).ids`` (what ``BertTokenizerFast``
  returns: it calls the same method, truncation and padding off);
- ``convert_tokens_to_ids``, ``unk_token_id``, ``batch_decode`` (the
  backend's ``decode``, with transformers' ``clean_up_tokenization`` when
  the config asks for it).

Anything else (other arguments, a batch, any other attribute) goes to the
real ``BertTokenizerFast``, loaded from the same directory on first use.
``load`` returns None, so the caller loads ``BertTokenizerFast`` itself, when
the directory holds no ``tokenizer.json`` or its config asks for something
the wrapper would not reproduce: a normalizer setting ``BertTokenizerFast``
would override, special tokens the backend lacks, or no explicit
``clean_up_tokenization_spaces``.

Thread: any; the fallback loads behind a lock.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from typing import Any

log = logging.getLogger(__name__)

_CLEAN_UP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
             (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))
_SPECIAL_KEYS = ("unk_token", "pad_token", "cls_token", "sep_token", "mask_token")


class LeanTokenizer:
    """See the module docstring; build with ``load``."""

    def __init__(self, path: str, backend: Any, config: dict[str, Any]):
        self.path = path
        self._backend = backend
        self._clean_up = bool(config["clean_up_tokenization_spaces"])
        unk = config.get("unk_token", "[UNK]")
        self.unk_token_id = backend.token_to_id(unk)
        self._full: Any = None
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str) -> LeanTokenizer | None:
        """The tokenizer in directory ``path``, or None (module docstring)."""
        from tokenizers import Tokenizer

        tokenizer_json = os.path.join(path, "tokenizer.json")
        config_json = os.path.join(path, "tokenizer_config.json")
        if not (os.path.isfile(tokenizer_json) and os.path.isfile(config_json)):
            return None
        with open(config_json, encoding="utf-8") as f:
            config = json.load(f)
        backend = Tokenizer.from_file(tokenizer_json)
        why = _unfaithful(backend, config)
        if why:
            log.info("tokenizer in %s: %s; loading it through transformers", path, why)
            return None
        backend.no_truncation()
        backend.no_padding()
        return cls(path, backend, config)

    def __call__(self, text: Any, add_special_tokens: bool = True,
                 return_tensors: str | None = None, **kwargs: Any) -> dict[str, Any]:
        if kwargs or not isinstance(text, str) or return_tensors not in (None, "pt"):
            return self.full()(text, add_special_tokens=add_special_tokens,
                               return_tensors=return_tensors, **kwargs)
        enc = self._backend.encode(text, add_special_tokens=add_special_tokens)
        out: dict[str, Any] = {"input_ids": list(enc.ids), "token_type_ids": list(enc.type_ids),
                               "attention_mask": list(enc.attention_mask)}
        if return_tensors == "pt":
            import torch

            out = {k: torch.tensor([v], dtype=torch.int64) for k, v in out.items()}
        return out

    def convert_tokens_to_ids(self, tokens: str | list[str]) -> int | list[int]:
        if isinstance(tokens, str):
            found = self._backend.token_to_id(tokens)
            return self.unk_token_id if found is None else found
        return [self.convert_tokens_to_ids(t) for t in tokens]  # type: ignore[misc]

    def batch_decode(self, sequences: list[list[int]], skip_special_tokens: bool = False,
                     **kwargs: Any) -> list[str]:
        if kwargs:
            return self.full().batch_decode(sequences, skip_special_tokens=skip_special_tokens,
                                            **kwargs)
        return [self._decode(list(ids), skip_special_tokens) for ids in sequences]

    def _decode(self, ids: list[int], skip_special_tokens: bool) -> str:
        text = self._backend.decode(ids, skip_special_tokens=skip_special_tokens)
        if self._clean_up:
            for before, after in _CLEAN_UP:
                text = text.replace(before, after)
        return text

    def full(self) -> Any:
        """The ``BertTokenizerFast`` of the same directory (imports transformers, once)."""
        with self._lock:
            if self._full is None:
                self._full = load_full_tokenizer(self.path)
            return self._full

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.full(), name)


def load_full_tokenizer(path: str) -> Any:
    """``BertTokenizerFast.from_pretrained(path)`` (imports transformers)."""
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(path)


def _unfaithful(backend: Any, config: dict[str, Any]) -> str | None:
    """Why ``BertTokenizerFast.from_pretrained`` would encode differently
    from ``backend`` as stored, or None."""
    if config.get("tokenizer_class") not in ("BertTokenizer", "BertTokenizerFast"):
        return f"tokenizer class {config.get('tokenizer_class')!r}"
    if "clean_up_tokenization_spaces" not in config:
        return "no clean_up_tokenization_spaces in its config"
    state = json.loads(backend.to_str()).get("normalizer") or {}
    if state.get("type") != "BertNormalizer":
        return f"normalizer {state.get('type')!r}"
    # BertTokenizerFast rebuilds the normalizer when its config says otherwise.
    wanted = {"lowercase": config.get("do_lower_case", True),
              "strip_accents": config.get("strip_accents"),
              "handle_chinese_chars": config.get("tokenize_chinese_chars", True)}
    if any(state.get(k) != v for k, v in wanted.items()):
        return "its config overrides the stored normalizer"
    vocab = backend.get_vocab(with_added_tokens=True)
    specials = [config[k] for k in _SPECIAL_KEYS if isinstance(config.get(k), str)]
    specials += [t for t in config.get("additional_special_tokens", []) if isinstance(t, str)]
    specials += [v["content"] for v in config.get("added_tokens_decoder", {}).values()
                 if isinstance(v, dict) and "content" in v]
    added = {t.content for t in backend.get_added_tokens_decoder().values()}
    missing = [t for t in specials if t not in vocab or t not in added]
    if missing:
        return f"special tokens not in tokenizer.json: {', '.join(missing[:5])}"
    moved = [v["content"] for i, v in config.get("added_tokens_decoder", {}).items()
             if isinstance(v, dict) and backend.token_to_id(v.get("content")) != int(i)]
    if moved:
        return f"special tokens at other ids than its config's: {', '.join(moved[:5])}"
    return None
