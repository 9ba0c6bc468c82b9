"""Every GEMM backend's packed form multiplies like torch.mm, at the row counts it serves."""

import pytest
import torch

from realtime.engine.cpu import gemm as cpu_gemm
from realtime.engine.cpu.gemm import FP32_BACKENDS, PACKERS, Matrix, MklPacked, backend_available

CPU = torch.device("cpu")


def needs(backend: str):
    return pytest.mark.skipif(not backend_available(backend, CPU, torch.float32),
                              reason=f"this torch cannot run the {backend} backend")


BACKENDS = [pytest.param(b, marks=needs(b)) for b in FP32_BACKENDS]


def _weight(n: int = 96, k: int = 64) -> torch.Tensor:
    return torch.randn(n, k, generator=torch.Generator().manual_seed(0)) * 0.1


def _x(rows: int, k: int = 64, seed: int = 1) -> torch.Tensor:
    return torch.randn(rows, k, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rows", [1, 2, 5, 8])
def test_each_backend_equals_mm_at_decode_row_counts(backend, rows):
    weight = _weight()
    form = PACKERS[backend](weight, 8)
    got = form(_x(rows))
    assert got.shape == (rows, 96)
    torch.testing.assert_close(got, _x(rows) @ weight.t(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("backend", [pytest.param(b, marks=needs(b)) for b in ("mm", "onednn")])
def test_any_row_backends_serve_prefill_sized_inputs(backend):
    weight = _weight()
    form = PACKERS[backend](weight, 8)
    assert form.any_rows
    wide = torch.randn(40, 128, generator=torch.Generator().manual_seed(3))
    x = wide[:, :64]  # non-contiguous rows, as the decoder's SiLU*up slice is
    torch.testing.assert_close(form(x), x @ weight.t(), rtol=1e-5, atol=1e-5)


@needs("mkl")
def test_mkl_padding_rows_do_not_change_the_real_rows_and_more_rows_are_refused():
    form = MklPacked(_weight(), 8)
    x = _x(8)
    assert torch.equal(form(x[:3]), form(x)[:3])
    with pytest.raises(ValueError, match="8 rows"):
        form(_x(9))


@needs("mkl")
def test_mkl_form_does_not_keep_the_plain_matrix():
    form = MklPacked(_weight(), 8)
    assert form._sizes.shape == (96, 64) and form._sizes.stride() == (0, 0)
    assert form.nbytes >= 96 * 64 * 4


def test_packed_backends_are_cpu_fp32_only():
    assert backend_available("mm", torch.device("cuda"), torch.bfloat16)
    for name in ("mkl", "onednn"):
        assert not backend_available(name, CPU, torch.float64)
        assert not backend_available(name, torch.device("cuda"), torch.float32)
    assert not backend_available("nonesuch", CPU, torch.float32)


class _Tagged:
    """A fake form that records which one ran."""

    any_rows = True
    nbytes = 1

    def __init__(self, backend):
        self.backend = backend

    def __call__(self, x, bias=None):
        return torch.full((x.shape[0], 1), float(len(self.backend)))


def test_matrix_runs_the_form_of_the_row_count_and_large_beyond():
    small, big = _Tagged("a"), _Tagged("bbb")
    m = Matrix((64, 1), {1: small, 2: small}, big)
    assert m(_x(1))[0, 0] == 1 and m(_x(2))[0, 0] == 1 and m(_x(3))[0, 0] == 3
    assert m.backend_for(2) == "a" and m.backend_for(50) == "bbb"
    assert m.nbytes == 2  # each distinct form counted once


def test_plain_matrix_serves_any_dtype():
    weight = _weight().double()
    m = cpu_gemm.plain(weight)
    x = torch.randn(4, 64, dtype=torch.float64)
    torch.testing.assert_close(cpu_gemm.matmul(x, m), x @ weight.t())
    assert m.shape == (64, 96) and m.backend_for(1) == "mm"
