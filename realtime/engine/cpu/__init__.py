"""The CPU-only parts of the engine: GEMM operands and their per-machine plan,
int8, the CPU described, torch's and OpenMP's thread settings, and the choice
of engine and precision on a CPU (``engine``: ONNX Runtime or torch, measured)."""
