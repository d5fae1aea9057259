#!/usr/bin/env python3
"""faiss's and hnswlib's HNSW on the vectors `engram bench knn` measures.

`engram bench knn` writes its base and query vectors as .fvecs, runs this
script with the same k, M, efConstruction and ef list, and prints its
figures beside its own. Each library that imports is measured; one that
does not is named in "missing" (install with `pip install numpy faiss-cpu
hnswlib`). Cosine similarity, as engram's index: vectors are L2-normalised
and compared by inner product.

Measured as the libraries are usually quoted, the kinder way for them:
queries per second from one batched search of all queries on one thread
(no per-call Python overhead), repeated until --seconds have passed; the
median latency from single-query calls. The graph is built on all cores.

Prints one JSON object: {"peers": [{"name", "build_s", "configs": [{"ef",
"recall_at_k", "qps", "p50_us"}]}], "missing": ["faiss: ...", ...]}.
"""

import argparse
import json
import os
import sys
import time


def read_fvecs(np, path):
    raw = np.fromfile(path, dtype=np.int32)
    if raw.size == 0:
        sys.exit(f"{path}: no vectors")
    dim = int(raw[0])
    rows = raw.reshape(-1, dim + 1)
    return np.ascontiguousarray(rows[:, 1:]).view(np.float32)


def normalise(np, x):
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(x / norms, dtype=np.float32)


def recall(truth, got):
    hits = 0
    for t, g in zip(truth, got):
        hits += len(set(int(x) for x in t) & set(int(x) for x in g))
    return round(hits / (len(truth) * len(truth[0])), 4)


def timed(search, queries, seconds):
    """(QPS of batched search, p50 µs of single-query search)."""
    done, started = 0, time.perf_counter()
    while True:
        search(queries)
        done += len(queries)
        if time.perf_counter() - started >= seconds:
            break
    qps = done / (time.perf_counter() - started)
    lat = []
    for i in range(min(len(queries), 1000)):
        t = time.perf_counter()
        search(queries[i : i + 1])
        lat.append(time.perf_counter() - t)
    lat.sort()
    return round(qps), round(lat[len(lat) // 2] * 1e6, 1)


def run_faiss(np, base, queries, truth, args):
    import faiss

    d = base.shape[1]
    index = faiss.IndexHNSWFlat(d, args.m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = args.ef_construction
    faiss.omp_set_num_threads(os.cpu_count() or 1)
    t = time.perf_counter()
    index.add(base)
    build_s = round(time.perf_counter() - t, 2)
    faiss.omp_set_num_threads(1)
    configs = []
    for ef in args.ef:
        index.hnsw.efSearch = ef
        _, got = index.search(queries, args.k)
        qps, p50 = timed(lambda q: index.search(q, args.k), queries, args.seconds)
        configs.append({"ef": ef, "recall_at_k": recall(truth, got), "qps": qps, "p50_us": p50})
    return {"name": f"faiss {faiss.__version__} IndexHNSWFlat", "build_s": build_s, "configs": configs}


def run_hnswlib(np, base, queries, truth, args):
    import hnswlib

    n, d = base.shape
    index = hnswlib.Index(space="ip", dim=d)
    index.init_index(max_elements=n, M=args.m, ef_construction=args.ef_construction, random_seed=42)
    index.set_num_threads(os.cpu_count() or 1)
    t = time.perf_counter()
    index.add_items(base, np.arange(n))
    build_s = round(time.perf_counter() - t, 2)
    index.set_num_threads(1)
    configs = []
    for ef in args.ef:
        index.set_ef(max(ef, args.k))
        got, _ = index.knn_query(queries, k=args.k)
        qps, p50 = timed(lambda q: index.knn_query(q, k=args.k), queries, args.seconds)
        configs.append({"ef": ef, "recall_at_k": recall(truth, got), "qps": qps, "p50_us": p50})
    try:
        from importlib.metadata import version

        release = version("hnswlib")
    except Exception:
        release = getattr(hnswlib, "__version__", "")
    return {"name": f"hnswlib {release} Index".replace("  ", " "), "build_s": build_s, "configs": configs}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True)
    p.add_argument("--query", required=True)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--ef-construction", type=int, default=200)
    p.add_argument("--ef", type=lambda s: [int(x) for x in s.split(",")], required=True)
    p.add_argument("--seconds", type=float, default=1.0)
    args = p.parse_args()
    try:
        import numpy as np
    except ImportError:
        print(json.dumps({"peers": [], "missing": ["numpy: not importable (pip install numpy faiss-cpu hnswlib)"]}))
        return
    base = normalise(np, read_fvecs(np, args.base))
    queries = normalise(np, read_fvecs(np, args.query))
    # The exact top k by inner product, in blocks of queries.
    truth = []
    for i in range(0, len(queries), 256):
        scores = queries[i : i + 256] @ base.T
        top = np.argpartition(-scores, args.k - 1, axis=1)[:, : args.k]
        truth.extend(top.tolist())
    peers, missing = [], []
    for name, run in (("faiss", run_faiss), ("hnswlib", run_hnswlib)):
        try:
            peers.append(run(np, base, queries, truth, args))
        except ImportError as e:
            missing.append(f"{name}: not importable ({e}; pip install faiss-cpu hnswlib)")
    print(json.dumps({"peers": peers, "missing": missing}))


if __name__ == "__main__":
    main()
