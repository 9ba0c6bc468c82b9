"""The CPU-only parts of the engine: the CPU described, torch's and OpenMP's
thread settings, the start-up advice, and the choice of engine and precision
on a CPU (``engine``: ONNX Runtime or torch, measured)."""
