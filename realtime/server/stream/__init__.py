"""One WebSocket connection (``session``) and its utterances: text in,
ordered segments, words and audio frames out, through a bounded outbox."""
