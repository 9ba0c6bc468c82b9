"""The server floor: the process that serves the engine to clients.

``app.Server`` (lifecycle: bind, load, serve, drain) and what it is made
of: its configuration, state, accounting and metrics here; ``http/`` the
port's one HTTP front (h11, the route table, the gate, the WebSocket
hand-over); ``stream/`` a WebSocket connection and its utterances;
``work/`` the model thread and what crosses to it; ``voices/`` named and
uploaded voices; ``openai/`` ``POST /v1/audio/speech``.

May import every floor below it: ``realtime.engine``, ``realtime.audio``,
``realtime.speech``, ``protocol`` and ``scheduler``; nothing imports it
but the entry points (``realtime.__main__``, ``realtime.normalize_command``).
"""
