"""An OpenAI-compatible ``POST /v1/audio/speech`` on the server's own port.

``request`` reads and checks the JSON body as OpenAI's API reference defines
it (its response formats are ``realtime.audio.encoders``); ``job`` runs one
request as an utterance through the same model worker and scheduler as the
WebSocket path; ``app`` is the request handler (the shared gate, quotas,
errors, audio or server-sent events) that the route table
(``realtime.server.http.routes``) sends ``POST /v1/audio/speech`` to.
docs/server.md explains the design.
"""
