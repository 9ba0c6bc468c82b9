"""The speech floor: text as the model should read it, pure.

Sentence splitting (``sentences``), normalization of numbers, dates,
money, addresses, identifiers and the rest per language (``en/``, ``zh/``;
``normalize``, ``rewrite``, ``units``, ``lang``), the script of a text and
its token estimate (``script``), speaking-rate and word-timing plans
(``speed``, ``timing``, ``word_layout``).

Below the server and the engine, which both use it; imports nothing of the
project but itself. No torch, asyncio or wire syntax here.
"""
