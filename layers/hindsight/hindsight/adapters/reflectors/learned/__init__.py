"""Learned offline reflector: a small classifier over the bundled multilingual embeddings.

Which statements of a turn state something lasting about the speaker is learned from
annotated dialogues (MSC persona summaries; ``training/train_extractor.py`` trains it and
``bench/extraction.py`` measures it against the rules). The weights (``weights.npz``,
a few KB) ship here. ``segments`` cuts turns into statements and clauses and computes the cheap
signals, ``model`` scores them, ``precision`` drops what is no fact of the speaker and
folds near-duplicates, ``normalise`` writes the fact in the third person and
``reflector`` merges the candidates the way the rule-based reflector does. The default
reflector (``HINDSIGHT_REFLECTOR=learned``) reads mean word embeddings (``static``);
``learned-e5`` reads the model's vectors of whole statements instead, far slower.
"""

from hindsight.adapters.reflectors.learned.reflector import E5_LABEL, LABEL, LearnedReflector

__all__ = ["E5_LABEL", "LABEL", "LearnedReflector"]
