"""The engine on CUDA: graphs captured per batch size and length bucket,
the attention over live rows and its Triton kernels, SDPA's backend choice,
and the profiler probe. Imported only where a GPU serves."""
