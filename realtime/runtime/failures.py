"""What kind of failure a model step raised, by exception type (never by
message text): out of device memory (the step is retried smaller) or a lost
device (the CUDA context is broken for the whole process).

Thread: pure functions.
"""

from __future__ import annotations

import torch


def is_oom(exc: BaseException) -> bool:
    return isinstance(exc, torch.OutOfMemoryError)


def is_device_lost(exc: BaseException) -> bool:
    """A CUDA error that breaks the context for the whole process (by type:
    torch raises ``AcceleratorError`` for them; out of memory is separate)."""
    return isinstance(exc, torch.AcceleratorError) and not is_oom(exc)
