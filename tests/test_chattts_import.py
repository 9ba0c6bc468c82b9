"""The runtime imports only the ChatTTS modules it builds; the whole package
still loads the usual way when someone asks for it (chattts_import.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import sys
import realtime.engine.compat  # registers the bare packages
from ChatTTS.model.embed import Embed
from ChatTTS.model.dvae import DVAE
from ChatTTS.config import Config
from ChatTTS.model.speaker import Speaker
import ChatTTS
light = [m for m in ("ChatTTS.core", "ChatTTS.model.gpt", "ChatTTS.norm", "vocos.pretrained")
         if m in sys.modules]
print("LIGHT", light)
from ChatTTS import Chat
from ChatTTS.model import GPT, gen_logits
print("FULL", Chat.__module__, GPT.__module__, "ChatTTS.core" in sys.modules)
"""


def test_submodules_load_alone_and_the_package_on_demand():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, check=True).stdout
    assert "LIGHT []" in out
    assert "FULL ChatTTS.core ChatTTS.model.gpt True" in out
