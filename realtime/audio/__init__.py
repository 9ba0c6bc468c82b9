"""The audio floor: 24 kHz float samples in, a client's bytes out.

``framer`` resamples and cuts PCM frames for the WebSocket, ``opus`` its
Opus packets, ``formats`` picks the framer of a ``speak``; ``encoders`` the
speech endpoint's response formats (PCM, WAV, MP3, Ogg Opus, FLAC, AAC).

Pure of the server and the engine: imports only ``protocol`` (and numpy,
soxr, PyAV).
"""
