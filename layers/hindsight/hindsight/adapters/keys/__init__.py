"""Store-time search keys (``hindsight.core.ports.KeyExpander``): what a memory is about,
in English and Chinese, indexed beside its text (see ``expander.py``)."""

from hindsight.adapters.keys.expander import Lexicon, LexiconKeyExpander, load_lexicon

__all__ = ["Lexicon", "LexiconKeyExpander", "load_lexicon"]
