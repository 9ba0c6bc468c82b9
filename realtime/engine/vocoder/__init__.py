"""Codes to 24 kHz samples: ChatTTS's Decoder and Vocos run as a stream
(``stream``), windows of many streams packed in one pass (``batch``), the
overlap with decoding (``overlap``), per-device precision (``precision``),
the runner's audio stage (``stage``) and the DVAE encoder for voice samples."""
