"""Rerankers: models that read the query and a memory together (the ``Reranker`` port).

``cross_encoder`` (sentence-transformers, local), ``bedrock`` (Amazon Bedrock's Rerank
API) and ``openai_compatible`` (an LLM asked to score the candidates). The bootstrap
builds the one ``HINDSIGHT_RERANKER`` names; ``core/retrieval/rerank.py`` calls it.
"""
