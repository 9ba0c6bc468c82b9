"""Runnable examples and demo data for the clients: a Pipecat pipeline and a LiveKit
Agents stream speaking a scripted LLM reply (`python -m examples.pipecat_example`,
`python -m examples.livekit_example`), the reply itself (`llm_script`) and the latency
probe's default corpus (`corpus.txt`). Not shipped: the package is `clients/`."""
