#!/usr/bin/env python3
"""Checks convert.py's output against SentencePiece and the original graph.
Usage: venv/bin/python verify.py [OUT_DIR]   (default ./out)"""
import json
import os
import random
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
import sentencepiece as spm
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convert  # noqa: E402
from texts import TEXTS  # noqa: E402

out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "out"))
tok = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
sp = spm.SentencePieceProcessor(model_file=os.path.join(out, "sentencepiece.model"))


def sp_ids(text):  # what the custom op does with add_bos=add_eos=True, reverse=False
    return [sp.bos_id()] + sp.encode(text) + [sp.eos_id()]


def session(path_or_bytes, extensions=False, threads=1):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    if extensions:
        from onnxruntime_extensions import get_library_path
        so.register_custom_ops_library(get_library_path())
    return ort.InferenceSession(path_or_bytes, so, providers=["CPUExecutionProvider"])


stripped = session(os.path.join(out, "model.onnx"))


def embed(texts):
    ids, splits = [], [0]
    for t in texts:
        ids += tok.encode(t).ids
        splits.append(len(ids))
    feed = {"token_ids": np.array(ids, dtype=np.int32), "row_splits": np.array(splits, dtype=np.int64)}
    return stripped.run(["outputs"], feed)[0]


# ---- graph I/O
m = onnx.load(os.path.join(out, "model.onnx"), load_external_data=False)
def shape(vi):
    return [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]
print("opsets", [(o.domain or "ai.onnx", o.version) for o in m.opset_import], "ir_version", m.ir_version)
for vi in m.graph.input:
    print("input ", vi.name, onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type), shape(vi))
for vi in m.graph.output:
    print("output", vi.name, onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type), shape(vi))
print("custom-domain nodes", sum(1 for n in m.graph.node if n.domain not in ("", "ai.onnx")))
del m

# ---- (a) token ids
bad = [t for t in TEXTS if tok.encode(t).ids != sp_ids(t)]
print(f"(a) token ids, curated texts: {len(TEXTS) - len(bad)}/{len(TEXTS)} identical", [t[:30] for t in bad])
rng = random.Random(1234)
alphabet = (list("abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789.,;:!?'\"-_()[]<>/@#") + list("àèéìòùÀÈÉçñßäöüœæ")
            + list("  \t\n\u00a0\u3000\u200b\u200d\x0b") + list("😀🍕👋🏽\u0301\u0300ﬁ½²™①ＡＢｃ")
            + list("日本語中文русскийالعربية한국어ελληνικά") + ["<s>", "</s>", "<unk>", "extra_token_id_2", "\u2581"])
words = [w for t in TEXTS for w in t.split()]
fuzz = []
for i in range(3000):
    if i % 2:
        fuzz.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))))
    else:
        fuzz.append(" ".join(rng.choice(words + alphabet) for _ in range(rng.randint(0, 12))))
bad = [t for t in fuzz if tok.encode(t).ids != sp_ids(t)]
print(f"(a) token ids, {len(fuzz)} random strings: {len(fuzz) - len(bad)} identical", [repr(t) for t in bad[:5]])

# ---- (b) embeddings vs the original graph run with onnxruntime-extensions
with tempfile.TemporaryDirectory() as work:
    original_bytes = convert.fetch_model(work)
original = session(original_bytes, extensions=True)
worst, worst_batch = 0.0, 0.0
ids_op_bad = 0
for t in TEXTS:
    ref = original.run(["outputs"], {"inputs": np.array([t], dtype=object)})[0]
    got = embed([t])
    worst = max(worst, float(np.abs(ref - got).max()))
# the op's own ids (graph output of the tokenizer node) vs tokenizer.json
op_only = onnx.load_model_from_string(original_bytes)
g = op_only.graph
node = [n for n in g.node if n.op_type == "SentencepieceTokenizer"][0]
keep = {node.name}
inits = set(node.input)
del g.output[:]
g.output.extend([onnx.helper.make_tensor_value_info(node.output[0], onnx.TensorProto.INT32, None),
                 onnx.helper.make_tensor_value_info(node.output[1], onnx.TensorProto.INT64, None)])
nodes = [n for n in g.node if n.name in keep]
del g.node[:]
g.node.extend(nodes)
kept = [i for i in g.initializer if i.name in inits]
del g.initializer[:]
g.initializer.extend(kept)
del g.value_info[:]
op_sess = session(op_only.SerializeToString(), extensions=True)
all_texts = TEXTS + fuzz[:500]
op_ids, op_splits = op_sess.run(None, {"inputs": np.array(all_texts, dtype=object)})
op_vs_sp = 0
for i, t in enumerate(all_texts):
    got_op = op_ids[op_splits[i]:op_splits[i + 1]].tolist()
    ids_op_bad += got_op != tok.encode(t).ids
    op_vs_sp += got_op != sp_ids(t)
print(f"(a') ids from the ORIGINAL custom op (onnxruntime-extensions, batch of {len(all_texts)}):"
      f" {op_vs_sp} differ from sentencepiece-python, {ids_op_bad} from tokenizer.json;"
      f" dtypes {op_ids.dtype}/{op_splits.dtype}, row_splits[:4]={op_splits[:4].tolist()}")
ref_b = original.run(["outputs"], {"inputs": np.array(TEXTS, dtype=object)})[0]
got_b = embed(TEXTS)
worst_batch = float(np.abs(ref_b - got_b).max())
single = np.stack([embed([t])[0] for t in TEXTS])
print(f"(b) max |emb_stripped - emb_original|: one sentence per call {worst:.3g}; batch of {len(TEXTS)} {worst_batch:.3g};"
      f" stripped batch vs stripped single {float(np.abs(got_b - single).max()):.3g}")
norms = np.linalg.norm(single, axis=1)
print(f"    output norms min {norms.min():.6f} max {norms.max():.6f}; shape {got_b.shape} {got_b.dtype}")

# ---- (c) cosines, one sentence per call
pairs = [("what time is it", "che ore sono"), ("che ore sono", "dimmi l'ora"),
         ("turn on the kitchen light", "accendi la luce della cucina"),
         ("weather in Rome", "che tempo fa a Roma"), ("weather in Rome", "send an email to Rome office"),
         ("turn on the kitchen light", "turn off the kitchen light")]
for a, b in pairs:
    ea, eb = embed([a])[0], embed([b])[0]
    cos = float(np.dot(ea, eb) / (np.linalg.norm(ea) * np.linalg.norm(eb)))
    print(f"(c) cos {cos:.4f}  {a!r} / {b!r}")

# ---- (d) latency, one sentence per call, 1 intra-op thread
lat_model, lat_total = [], []
sents = [s for p in pairs for s in p]
for s in sents * 3:
    embed([s])  # warm-up
for _ in range(60):
    for s in sents:
        t0 = time.perf_counter()
        enc = tok.encode(s).ids
        t1 = time.perf_counter()
        stripped.run(["outputs"], {"token_ids": np.array(enc, dtype=np.int32),
                                   "row_splits": np.array([0, len(enc)], dtype=np.int64)})
        t2 = time.perf_counter()
        lat_model.append((t2 - t1) * 1e3)
        lat_total.append((t2 - t0) * 1e3)
long_text = TEXTS[TEXTS.index("The quick brown fox jumps over the lazy dog. " * 20)]
lat_long = []
for _ in range(50):
    t0 = time.perf_counter(); embed([long_text]); lat_long.append((time.perf_counter() - t0) * 1e3)
print(f"(d) p50 ms (1 intra-op thread, {len(lat_model)} calls, short sentences): model {statistics.median(lat_model):.3f},"
      f" tokenize+model {statistics.median(lat_total):.3f}, p90 total {np.percentile(lat_total, 90):.3f};"
      f" {len(tok.encode(long_text).ids)}-token text p50 {statistics.median(lat_long):.3f}")

# ---- data for rustcheck/ (tokenizers crate + ort): sentencepiece ids, python-tokenizers ids, python embeddings
items = [{"text": t, "ids": sp_ids(t), "hf_ids": tok.encode(t).ids, "emb": single[i].tolist()} for i, t in enumerate(TEXTS)]
items += [{"text": t, "ids": sp_ids(t), "hf_ids": tok.encode(t).ids} for t in fuzz]
with open(os.path.join(out, "expected_rust.json"), "w", encoding="utf-8") as f:
    json.dump({"items": items}, f)
print(f"wrote {os.path.join(out, 'expected_rust.json')} ({len(items)} texts)")
