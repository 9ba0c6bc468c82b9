"""The CPU-only parts of the runtime: GEMM operands and their per-machine plan,
int8, the CPU described, and torch's and OpenMP's thread settings."""
