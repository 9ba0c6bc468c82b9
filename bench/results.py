"""How a bench hands over its results: JSON rows, a PNG, one JSON line last."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def write_results(out: Path, stem: str, rows: Sequence[dict[str, Any]],
                  plot: Callable[[Sequence[dict[str, Any]], Path], None],
                  headline: Callable[[Sequence[dict[str, Any]]], dict[str, Any]],
                  started: float) -> int:
    """``out/stem.json`` and ``out/stem.png``, a line saying so, then the
    headline as the last stdout line (what scripts and issue notes read)."""
    (out / f"{stem}.json").write_text(json.dumps(list(rows), indent=1))
    plot(rows, out / f"{stem}.png")
    print(f"wrote {out / (stem + '.json')} and {out / (stem + '.png')} "
          f"in {time.perf_counter() - started:.0f} s")
    print(json.dumps(headline(rows)))
    return 0
