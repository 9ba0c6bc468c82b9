"""Voices a deployment names (``file``), voices from a recording
(``upload``, ``POST /v1/voices``) and the thread that encodes samples."""
