"""Case tables by category (tests/test_speech_{en,zh}_categories.py)."""

from __future__ import annotations

Cases = dict[str, list[tuple[str, str]]]


def rows(cases: Cases) -> list[tuple[str, str, str]]:
    """(category, written, spoken) for pytest's parametrize."""
    return [(category, w, s) for category, pairs in cases.items() for w, s in pairs]


def check_table(cases: Cases, categories: tuple[str, ...]) -> None:
    """Every measured category, in the tool's order, 20 cases or more, none twice."""
    assert tuple(cases) == categories
    assert all(len(pairs) >= 20 for pairs in cases.values())
    written = [w for pairs in cases.values() for w, _ in pairs]
    assert len(set(written)) == len(written)
