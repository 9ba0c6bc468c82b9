"""Shared helpers for the runtime tests: tiny-random assets, a CPU runner, and
the ``Driver`` that runs jobs through ``execute`` (from bench/driver.py).

Fidelity assets. Plain tiny-random weights (transformers' init, std 0.02)
leave the GPT's attention and MLP a percent of the residual stream: every
prompt then decodes to the same greedy codes and a test comparing codes
cannot tell one job's prompt, KV slot or batch row from another's.
``fidelity_assets`` redraws every projection with unit gain (std
1/sqrt(fan_in)) and scales the code heads by ``HEAD_GAIN``, so the prompt and
the KV cache decide the codes and argmax margins stay far above float error.
``assert_distinct`` is what every fidelity test checks first: its references
must differ pairwise, or the test could pass vacuously.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from bench.driver import Driver  # noqa: F401 - re-exported for the test modules
from realtime.engine.api import RuntimeOptions, SamplingParams, SegmentRequest
from realtime.engine.build import build_runner
from realtime.engine.model.shapes import TINY
from realtime.engine.model.weights import ModelAssets, random_assets
from realtime.server.voices.samples import runtime_voice

GREEDY = dict(temperature=1e-5, min_new_tokens=8, max_new_tokens=48)
TEXTS = ["Hello world, this is a test.", "A b c.", "The test of the world and this, hello again.",
         "To be."]
VOICES = ("ash", "default", "birch")
HEAD_GAIN = 8.0  # code-head logits of std ~4.6: greedy margins >= 1e-3 on every fixture

_ASSETS: dict[int, ModelAssets] = {}
_FIDELITY: dict[int, ModelAssets] = {}


@pytest.fixture(scope="module")
def one_torch_thread():
    """Run a module's tests on one torch thread: the models are tiny, the two
    cores are shared, and extra threads only add contention."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_assets(seed: int = 0) -> ModelAssets:
    """Tiny-random assets, built once per seed per process (read-only use)."""
    if seed not in _ASSETS:
        _ASSETS[seed] = random_assets(TINY, seed)
    return _ASSETS[seed]


def fidelity_assets(seed: int = 0) -> ModelAssets:
    """Tiny assets whose greedy codes depend on the prompt and speaker (see
    the module docstring); built once per seed, read-only use."""
    if seed not in _FIDELITY:
        assets = random_assets(TINY, seed)  # a fresh copy: scaled in place below
        gen = torch.Generator().manual_seed(seed + 100)
        with torch.no_grad():
            for name, weight in assets.gpt_state.items():
                if name.endswith("proj.weight"):
                    weight.copy_(torch.randn(weight.shape, generator=gen) / weight.shape[1] ** 0.5)
            for head in [*assets.embed.head_code, assets.embed.head_text]:  # text: the refine pass
                head.parametrizations.weight.original0.mul_(HEAD_GAIN)
        _FIDELITY[seed] = assets
    return _FIDELITY[seed]


def tiny_runner(seed: int = 0, assets: ModelAssets | None = None, capture=None, **options):
    """A CPU runner over tiny random weights; ``capture`` (a
    ``bench.strict_graphs.StrictCapture``, say) gives it graphs."""
    options.setdefault("device", "cpu")
    # The torch decoder (the GPU's, and fp32's codes identical to upstream's) unless a
    # test asks for another: the ONNX Runtime engine has its own tests (test_ort_*.py).
    options.setdefault("cpu_engine", "torch")
    if options["device"].split(":")[0] == "cpu":
        options.setdefault("precision", "fp32")
    opts = RuntimeOptions(weights="tiny-random", **options)
    return build_runner(opts, assets=assets or tiny_assets(seed), capture=capture)


def strict_graph_runner(build=None, **options):
    """A runner (``build``: ``tiny_runner`` unless given) whose graphs are
    captured by bench/strict_graphs.py's stand-in, warmed up: every shape
    captured, padded batches as with CUDA graphs."""
    from bench.strict_graphs import StrictCapture

    runner = (build or tiny_runner)(capture=StrictCapture(), **options)
    runner.warmup()
    return runner


def fidelity_runner(**options):
    return tiny_runner(assets=fidelity_assets(), **options)


def meta_runner(max_slots: int = 4):
    """A ``ModelRunner`` on the ``meta`` device in bf16 (shapes, devices and
    dtypes without values: what CUDA would run, minus the numbers)."""
    from realtime.engine.runner import ModelRunner

    opts = RuntimeOptions(weights="tiny-random", device="meta", max_slots=max_slots,
                          batch_sizes=(1, 2, 4), kv_buckets=(64,), cuda_graphs=False)
    return ModelRunner(fidelity_assets(), opts, torch.device("meta"), torch.bfloat16, vocoder=None)


class FrozenClock:
    """The vocoder's clock, standing still: a model infinitely faster than real time."""

    now = 50.0

    def __call__(self) -> float:
        return self.now


def request(text: str, streaming: bool = False, voice: str | None = "ash", sample=None,
            **params) -> SegmentRequest:
    """A request with ``voice`` in the wire's syntax, resolved as the server does."""
    return SegmentRequest(text, voice=None if voice is None else runtime_voice(voice),
                          params=SamplingParams(**params), streaming=streaming, sample=sample)


_UPSTREAM: dict[tuple[str, str], object] = {}


def upstream_reference(text: str, voice: str = "ash"):
    """Upstream's greedy (``GREEDY``) result for ``text`` in ``voice`` on the
    fidelity assets: codes [N, Q] and hidden states [N, D]. Built once per
    process (upstream's decode is the slow part of the fidelity tests; a
    mutation run forks its test processes after the first run filled this)."""
    key = (text, voice)
    if key not in _UPSTREAM:
        from bench.upstream import UpstreamGPT

        if "gpt" not in _UPSTREAM_GPT:
            _UPSTREAM_GPT["gpt"] = UpstreamGPT(fidelity_assets())
        prompt = _prompt_runner().prepare(request(text, voice=voice, **GREEDY)).work.prompt
        _UPSTREAM[key] = _UPSTREAM_GPT["gpt"].generate([prompt], **GREEDY)[0]
    return _UPSTREAM[key]


_UPSTREAM_GPT: dict[str, object] = {}
_PROMPTS: dict[str, object] = {}


def _prompt_runner():
    if "runner" not in _PROMPTS:
        _PROMPTS["runner"] = fidelity_runner(max_slots=1, batch_sizes=(1,), kv_buckets=(256,))
    return _PROMPTS["runner"]


@pytest.fixture(scope="module")
def references() -> dict:
    """Upstream's greedy result for each of ``TEXTS`` (voice "ash"), checked
    pairwise distinct."""
    refs = {text: upstream_reference(text) for text in TEXTS}
    assert_distinct({t: r.codes for t, r in refs.items()})
    return refs


def assert_distinct(codes: dict) -> None:
    """Every pair of reference code sequences differs (else a test comparing
    against them could not notice swapped rows, slots or prompts)."""
    assert len(codes) >= 2
    for (a, ca), (b, cb) in itertools.combinations(codes.items(), 2):
        assert not torch.equal(ca, cb), f"references {a!r} and {b!r} decode to the same codes"
