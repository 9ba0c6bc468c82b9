"""MKL-packed matrices multiply like torch.mm at every row count, or fall back to it."""

import pytest
import torch

from realtime.runtime import cpu_gemm
from realtime.runtime.cpu_gemm import PackedMatrix, matmul, packing_supported, prepare

needs_mkl = pytest.mark.skipif(not packing_supported(torch.device("cpu"), torch.float32),
                               reason="this torch has no MKL packed sgemm")


def _weight(n: int = 96, k: int = 64) -> torch.Tensor:
    return torch.randn(n, k, generator=torch.Generator().manual_seed(0)) * 0.1


@needs_mkl
@pytest.mark.parametrize("rows", [1, 2, 5, 8, 9, 40])
def test_packed_matrix_equals_mm_at_every_row_count(rows):
    weight = _weight()
    packed = prepare(weight, rows=8)
    assert isinstance(packed, PackedMatrix)
    x = torch.randn(rows, 64, generator=torch.Generator().manual_seed(rows))
    got = matmul(x, packed)
    assert got.shape == (rows, 96)
    torch.testing.assert_close(got, x @ weight.t(), rtol=1e-5, atol=1e-6)


@needs_mkl
def test_padding_rows_do_not_change_the_real_rows():
    packed = prepare(_weight(), rows=8)
    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(1))
    assert torch.equal(matmul(x[:3], packed), matmul(x, packed)[:3])


@needs_mkl
def test_packed_copy_is_reported_and_plain_matrix_kept():
    weight = _weight()
    packed = prepare(weight, rows=8)
    assert torch.equal(packed.w_t, weight.t())
    assert packed.shape == (64, 96)
    assert packed.packed_nbytes >= weight.numel() * 4


def test_unsupported_or_disabled_gives_the_plain_transposed_matrix():
    weight = _weight()
    for plain in (prepare(weight, rows=0), prepare(weight.double(), rows=8)):
        assert isinstance(plain, torch.Tensor) and plain.is_contiguous()
        assert torch.equal(plain, weight.t().to(plain.dtype))
    x = torch.randn(4, 64, dtype=torch.float64)
    torch.testing.assert_close(matmul(x, prepare(weight.double())), x @ weight.double().t())


def test_an_mkl_failure_falls_back_to_mm(monkeypatch):
    def refuse(*_):
        raise RuntimeError("no packed sgemm here")

    monkeypatch.setattr(cpu_gemm, "PackedMatrix", refuse)
    monkeypatch.setattr(cpu_gemm, "_unavailable", False)
    monkeypatch.setattr(cpu_gemm, "packing_supported", lambda *_: True)
    weight = _weight()
    plain = cpu_gemm.prepare(weight)
    assert isinstance(plain, torch.Tensor) and torch.equal(plain, weight.t())
    assert cpu_gemm._unavailable  # later matrices skip the attempt


def test_packed_model_decodes_like_the_plain_one():
    import realtime.runtime.compat  # noqa: F401  (before ChatTTS)
    from realtime.runtime.model import KVCache, StaticGPT
    from realtime.runtime.shapes import TINY
    from realtime.runtime.weights import random_assets

    assets = random_assets(TINY, seed=0)
    cpu = torch.device("cpu")
    packed = StaticGPT(TINY, assets.gpt_state, assets.embed, cpu, torch.float32)
    plain = StaticGPT(TINY, assets.gpt_state, assets.embed, cpu, torch.float32, pack_rows=0)
    assert plain.packed_nbytes == 0
    b = 4
    x = torch.randn(b, TINY.hidden, generator=torch.Generator().manual_seed(2))
    slots, pos = torch.arange(b), torch.tensor([0, 3, 1, 2])
    outs = []
    for model in (packed, plain):
        cache = KVCache(TINY, b, 16, torch.float32, cpu)
        outs.append((model.decode(x, slots, pos, cache, 4, first_slot=0), cache.k[0].clone()))
    torch.testing.assert_close(outs[0][0], outs[1][0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outs[0][1], outs[1][1], rtol=1e-5, atol=1e-6)
