"""Building modules whose every weight is loaded right after: no random init.

The upstream classes (Embed, DVAE, Vocos) draw random initial weights in
their constructors; for a full-size checkpoint that is seconds of
``uniform_``/``normal_`` over tensors a strict ``load_state_dict`` then
overwrites (3.5 of the 8 s ``load_checkpoint`` took on a busy 2-core Xeon).
``random_init_skipped()`` makes ``torch.nn.init``'s random initializers
return their tensor untouched while it is active. Only the random ones:
``zeros_``, ``ones_`` and ``constant_`` still run, so a buffer a constructor
fills with a constant and no checkpoint holds stays right. Use it only
around construction followed by a strict load of every parameter.

Thread: patches module attributes process-wide while active; call it from
the one thread that builds the model (start-up).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

RANDOM_INITS = ("uniform_", "normal_", "trunc_normal_", "kaiming_uniform_", "kaiming_normal_",
                "xavier_uniform_", "xavier_normal_", "orthogonal_")


def _untouched(tensor: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    return tensor


@contextlib.contextmanager
def random_init_skipped() -> Iterator[None]:
    saved = {name: getattr(torch.nn.init, name) for name in RANDOM_INITS}
    for name in RANDOM_INITS:
        setattr(torch.nn.init, name, _untouched)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(torch.nn.init, name, fn)
