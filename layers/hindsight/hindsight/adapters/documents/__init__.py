"""Reading uploaded documents (``hindsight.core.ports.DocumentConverter``)."""

from hindsight.adapters.documents.markitdown_converter import MarkItDownConverter

__all__ = ["MarkItDownConverter"]
