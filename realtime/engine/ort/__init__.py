"""The CPU engine on ONNX Runtime: the GPT backbone as one ONNX graph (int4,
int8, fp32) written from the checkpoint's weights and kept in the prepared
cache, its K/V rows bound in place, and the vocoder's convolutions as a graph.
onnx and onnxruntime are imported only on these paths."""
