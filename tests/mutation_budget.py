"""How many examples a property test draws: its normal count, or a fifth of
it under a mutation run.

``tools/mutate.py`` sets ``REALTIME_MUTATION`` in the environment of its
mutmut runs. Those rerun the slowest property tests once per surviving
mutant (the scheduler's state machine is reached by almost every function of
scheduler/), so the full count would make a run last hours on two shared
cores. The normal suite and CI keep the full count.
"""

import os

UNDER_MUTATION = bool(os.environ.get("REALTIME_MUTATION"))


def examples(normal: int) -> int:
    """``normal``, or a fifth of it (at least one) under a mutation run."""
    return max(1, normal // 5) if UNDER_MUTATION else normal
