"""Text to what ChatTTS reads: the front end that turns a normalized sentence
into token ids (upstream's tokenizer and a lean one), the words it speaks
(``spoken``) and the voice table of speaker embeddings."""
