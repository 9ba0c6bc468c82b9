"""Benchmarks, the soak driver and the scheduler simulator: not shipped.

``python -m bench <name> [flags]`` runs one; ``python -m bench`` lists them.
Each prints a table and, as its last line, one JSON object.
"""
