"""Which graph runs prompts (realtime/engine/ort/prompts.py): measured once per machine.

The int8-dynamic graph serves where it runs a prompt faster than the decode
graph; the verdict is kept, so a later start neither times again nor builds
the graph that lost; fp32 keeps its own graph; tiny models are not timed.
"""

from __future__ import annotations

import logging

import pytest
from runtime_fixtures import tiny_assets

from realtime.engine.ort import graph_entry, prompts
from realtime.engine.ort.backbone import OrtBackbone
from realtime.engine.ort.model import OrtGPT

FULL_SIZE = prompts.TINY_BYTES  # what a full-size graph's bytes look like to the choice


@pytest.fixture()
def decode():
    return OrtGPT(tiny_assets(), "int4", 1, False, None)


def _choose(decode, cache_dir):
    return prompts.prompt_backbone(tiny_assets(), "int4", decode.backbone, 1, False, cache_dir, FULL_SIZE)


def test_the_faster_graph_serves_and_the_verdict_is_kept(decode, tmp_path, monkeypatch, caplog):
    timed = []

    def measure(sessions, shape, tokens=prompts.PROMPT_TOKENS):
        timed.append(set(sessions))
        return {"int4": 9.0, prompts.PROMPT_FORM: 3.0}

    monkeypatch.setattr(prompts, "measure", measure)
    assert isinstance(_choose(decode, str(tmp_path)), OrtBackbone)
    assert timed == [{"int4", prompts.PROMPT_FORM}]
    with caplog.at_level(logging.INFO):
        assert isinstance(_choose(decode, str(tmp_path)), OrtBackbone)
    assert len(timed) == 1  # the kept verdict
    assert f"on the {prompts.PROMPT_FORM} graph (measured earlier on this machine" in caplog.text


def test_where_the_decode_graph_wins_the_prompt_graph_is_not_built_again(decode, tmp_path, monkeypatch,
                                                                         caplog):
    monkeypatch.setattr(prompts, "measure", lambda sessions, shape: {"int4": 3.0, prompts.PROMPT_FORM: 9.0})
    assert _choose(decode, str(tmp_path)) is None
    with caplog.at_level(logging.INFO):
        assert _choose(decode, str(tmp_path)) is None
    assert "measured earlier on this machine" in caplog.text
    assert not [r for r in caplog.records if r.name == graph_entry.__name__]  # nothing built


def test_fp32_keeps_its_own_graph_and_tiny_models_take_the_prompt_graph(decode):
    assert OrtGPT(tiny_assets(), "fp32", 1, False, None).prompts is None
    assert isinstance(decode.prompts, OrtBackbone)


def test_measure_times_each_session_on_a_real_prompt(decode):
    ms = prompts.measure({"int4": decode.backbone, prompts.PROMPT_FORM: decode.prompts},
                         tiny_assets().shape, tokens=8)
    assert set(ms) == {"int4", prompts.PROMPT_FORM} and all(t > 0 for t in ms.values())
