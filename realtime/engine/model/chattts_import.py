"""Import the ChatTTS classes the runtime builds, and nothing else of ChatTTS.

``from ChatTTS.model.embed import Embed`` runs ``ChatTTS/__init__.py`` first,
and that imports ``ChatTTS.core``: everything upstream's ``Chat`` uses (the
GPT on transformers' generation, vocos' pretrained loader and scipy, the
normalizer and numba, ``ChatTTS.model``'s whole ``__init__``). On a 2-core
Xeon that was most of a warm start's imports, for classes the runtime never
builds. ``bare_packages()`` puts ``ChatTTS`` and ``ChatTTS.model`` in
``sys.modules`` as packages whose ``__init__`` has not run: importing a
submodule (``ChatTTS.model.embed``, ``ChatTTS.model.dvae``, ``ChatTTS.config``)
then loads that file and what it imports. The first time anything reads a
name the ``__init__`` would have defined (``ChatTTS.Chat``, ``from
ChatTTS.model import GPT``), the ``__init__`` runs then, so code that imports
ChatTTS the usual way (the text normalizer, upstream references in tests)
gets the whole package as before.

``ChatTTS.model.dvae`` imports ``vector_quantize_pytorch`` at module level
(for the encoder's quantizer, ``GFSQ``), and that imports einx and with it
``torch._dynamo``: about a second of a warm start on a quiet 2-core Xeon, for
a class the speech path never builds (the Decoder is a ``DVAE`` without
``vq_config``). ``bare_packages()`` therefore imports ``ChatTTS.model.dvae``
with a stand-in ``vector_quantize_pytorch`` in ``sys.modules`` whose
``GroupedResidualFSQ`` imports the real class when first called, and removes
the stand-in right after: every later import gets the real package, and a
DVAE built with ``vq_config`` holds the real quantizer.

Call it before anything imports ChatTTS; once the real package is loaded it
does nothing.

Thread: the first caller's (start-up); imports hold Python's import lock.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types

log = logging.getLogger(__name__)

PACKAGES = ("ChatTTS", "ChatTTS.model")
QUANTIZER = "vector_quantize_pytorch"


class _DeferredPackage(types.ModuleType):
    """A package whose ``__init__`` runs on the first read of a missing name."""

    def __getattr__(self, name: str):
        if name.startswith("__") or self.__dict__.get("_init_ran"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        self._init_ran = True
        spec = self.__spec__
        assert spec is not None and spec.loader is not None
        log.debug("running %s's __init__ (for %s)", self.__name__, name)
        spec.loader.exec_module(self)
        return getattr(self, name)


def bare_packages() -> None:
    """Register ``PACKAGES`` without running their ``__init__`` (docstring)."""
    for name in PACKAGES:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            return  # not installed: the import that needs it will say so
        module = _DeferredPackage(name)
        module.__spec__ = spec
        module.__path__ = list(spec.submodule_search_locations)
        module.__file__ = spec.origin
        module.__package__ = name
        module.__loader__ = spec.loader
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
    _import_dvae_without_quantizer()


def _grouped_residual_fsq(*args, **kwargs):
    """``vector_quantize_pytorch.GroupedResidualFSQ(*args, **kwargs)``, imported now."""
    from vector_quantize_pytorch import GroupedResidualFSQ

    return GroupedResidualFSQ(*args, **kwargs)


def _import_dvae_without_quantizer() -> None:
    """``ChatTTS.model.dvae`` with ``GroupedResidualFSQ`` deferred (docstring)."""
    if "ChatTTS.model.dvae" in sys.modules or QUANTIZER in sys.modules:
        return
    stand_in = types.ModuleType(QUANTIZER)
    stand_in.GroupedResidualFSQ = _grouped_residual_fsq  # type: ignore[attr-defined]
    sys.modules[QUANTIZER] = stand_in
    try:
        importlib.import_module("ChatTTS.model.dvae")
    finally:
        if sys.modules.get(QUANTIZER) is stand_in:
            del sys.modules[QUANTIZER]
