"""A checkpoint's tokenizer without transformers (lean_tokenizer.py): the
same ids, token lookups and decoded text as ``BertTokenizerFast`` on the
same directory, and ``BertTokenizerFast`` itself where the directory asks
for something the wrapper would not reproduce."""

from __future__ import annotations

import json

import pytest
import torch
from runtime_fixtures import tiny_assets

from realtime.engine.text.lean_tokenizer import LeanTokenizer, load_full_tokenizer
from realtime.engine.text.tokenizer import load_tokenizer, save_tokenizer

TEXTS = ["[Stts][spk_emb][speed_5]hello world, this is a test.[uv_break][Ptts]",
         "Hello THERE!  Ünïcödé accents, tabs\tand\nnewlines; (brackets) 'quotes' \"double\"",
         "一丁七万丈三上下 mixed 中文 and English？！。", "", "   ", "[laugh]x[lbreak][Ebreak]",
         "unknownwordpieces zzqx", "[Sbreak]a b c[Pbreak][oral_2][laugh_0][break_6]"]


@pytest.fixture
def tokenizer_dir(tmp_path):
    save_tokenizer(tiny_assets().tokenizer, str(tmp_path))
    return tmp_path


def test_it_encodes_looks_up_and_decodes_as_bert_tokenizer_fast(tokenizer_dir):
    lean, full = LeanTokenizer.load(str(tokenizer_dir)), load_full_tokenizer(str(tokenizer_dir))
    assert isinstance(lean, LeanTokenizer) and load_tokenizer(str(tokenizer_dir)).__class__ is LeanTokenizer
    for text in TEXTS:
        for special in (False, True):
            want = full(text, add_special_tokens=special)
            got = lean(text, add_special_tokens=special)
            assert got["input_ids"] == want["input_ids"], text
            assert got["attention_mask"] == want["attention_mask"]
        pt = lean(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        assert torch.equal(pt, full(text, add_special_tokens=False, return_tensors="pt")["input_ids"])
        ids = want["input_ids"]
        assert lean.batch_decode([ids]) == full.batch_decode([ids], skip_special_tokens=False)
        assert (lean.batch_decode([ids], skip_special_tokens=True)
                == full.batch_decode([ids], skip_special_tokens=True))
    tokens = ["[Stts]", "[spk_emb]", "[Ebreak]", "[break_0]", "hello", "nosuchtoken"]
    assert lean.convert_tokens_to_ids(tokens) == full.convert_tokens_to_ids(tokens)
    assert lean.convert_tokens_to_ids("[Ptts]") == full.convert_tokens_to_ids("[Ptts]")
    assert lean.unk_token_id == full.unk_token_id
    # What it does not answer itself goes to BertTokenizerFast: a padded batch, other attributes.
    batch = lean(["hello", "hello world"], add_special_tokens=False, padding=True, return_tensors="pt")
    assert batch["input_ids"].shape == (2, 2)
    assert lean.convert_ids_to_tokens(want["input_ids"]) == full.convert_ids_to_tokens(want["input_ids"])


def test_clean_up_of_tokenization_spaces_follows_the_config(tokenizer_dir):
    config = tokenizer_dir / "tokenizer_config.json"
    doc = json.loads(config.read_text())
    config.write_text(json.dumps({**doc, "clean_up_tokenization_spaces": True}))
    lean, full = LeanTokenizer.load(str(tokenizer_dir)), load_full_tokenizer(str(tokenizer_dir))
    ids = full("hello , world . is this a test ? it is !", add_special_tokens=False)["input_ids"]
    assert lean.batch_decode([ids]) == full.batch_decode([ids]) != full.batch_decode(
        [ids], clean_up_tokenization_spaces=False)


@pytest.mark.parametrize("change", ["no tokenizer.json", "lowercase off", "no clean-up key",
                                    "unknown special", "another class"])
def test_what_it_would_not_reproduce_goes_to_transformers(tokenizer_dir, change):
    config = tokenizer_dir / "tokenizer_config.json"
    doc = json.loads(config.read_text())
    if change == "no tokenizer.json":
        (tokenizer_dir / "tokenizer.json").unlink()
    elif change == "lowercase off":  # BertTokenizerFast would rebuild the normalizer
        doc["do_lower_case"] = False
    elif change == "no clean-up key":
        del doc["clean_up_tokenization_spaces"]
    elif change == "unknown special":
        doc["additional_special_tokens"] = [*doc["additional_special_tokens"], "[not_stored]"]
    else:
        doc["tokenizer_class"] = "XLMRobertaTokenizer"
    config.write_text(json.dumps(doc))
    assert LeanTokenizer.load(str(tokenizer_dir)) is None
    if change == "lowercase off":
        tok = load_tokenizer(str(tokenizer_dir))
        assert not isinstance(tok, LeanTokenizer)
        upper, lower = (tok(t, add_special_tokens=False)["input_ids"] for t in ("Hello", "hello"))
        assert upper != lower
