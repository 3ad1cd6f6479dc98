"""Retrieval: how retrieve ranks the candidates of a query and shapes what it returns.

``ranking`` fuses the dense and keyword evidence (``fusion``, ``lexical``, ``centering``)
and weighs it by time, use, speaker (``speakers``), states (``states``, ``state_values``,
``state_lexicon``, ``state_factor``) and echoes (``echoes``); ``score_parts`` explains a
score and ``score_cut`` applies ``min_score``; ``rerank`` is the optional second stage;
``subjects`` answers a query about a name nobody mentions; ``search_filter``, ``cursor``
and ``parallel`` shape the searches and pages; ``highlight`` and ``shaping`` present a result.
The use case that drives them is ``hindsight.core.usecases.retrieve``.
"""
