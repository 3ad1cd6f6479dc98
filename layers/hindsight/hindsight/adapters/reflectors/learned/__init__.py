"""Learned offline reflector: a small classifier over the bundled multilingual embeddings.

Which statements of a turn state something lasting about the speaker is learned from
annotated dialogues (MSC persona summaries; ``bench/train_extractor.py`` trains it and
``bench/extraction.py`` measures it against the rules). The weights (``weights.npz``,
a few KB) ship here. ``segments`` cuts turns into statements and computes the cheap
signals, ``model`` scores them, ``normalise`` writes the fact in the third person and
``reflector`` merges the candidates the way the rule-based reflector does. Selected with
``HINDSIGHT_REFLECTOR=learned``; ``learned-static`` reads mean word embeddings instead of
the model's vectors (``static``), far faster.
"""

from hindsight.adapters.reflectors.learned.reflector import LABEL, STATIC_LABEL, LearnedReflector

__all__ = ["LABEL", "STATIC_LABEL", "LearnedReflector"]
