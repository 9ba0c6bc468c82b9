"""The model thread (``worker``) and what the event loop and it hand each
other: commands, prepared segments, step updates, the admission policy."""
