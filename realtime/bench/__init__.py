"""Benchmarks: ``python -m realtime.bench [runtime|server] [--quick]``."""
