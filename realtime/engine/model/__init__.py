"""ChatTTS's model as the engine holds it: the checkpoint (its files, their
import, the weights' checks), the shapes read from it, the prepared forms kept
per machine (``prepared_*``), the GPT's two ends every decoder shares
(``gpt_ends``) and the torch static-KV decoder (``gpt``)."""
