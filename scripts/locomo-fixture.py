#!/usr/bin/env python3
"""Convert LoCoMo (locomo10_v2; github.com/snap-research/locomo,
data/locomo10.zip) into the memory-fixture format of tests/fixtures/memory
(conversations.jsonl, questions.jsonl), for `engram bench memory
--fixture DIR`: a public multi-session set beside our own (docs/memory.md,
*On a public set*). Nothing of it is in the repository or downloaded here.

Standard library only.  Usage:

    python3 scripts/locomo-fixture.py --src DIR --out DIR [--first-person --user-side-only] [--names]

Mapping:
* one LoCoMo file -> one conversation "L<file number>", lang "en";
  split "dev" for 26, 30, 41, 42, 43 and "heldout" for 44, 47, 48, 49, 50;
* each non-empty session_N -> a session "L26-s<k>" (k counts kept sessions
  from 1), at = session_N_date_time read as local time, offset +00:00;
* speaker_a's messages are "user", speaker_b's are "assistant": a speaker_a
  message opens a turn and the speaker_b message right after it closes it.
  A speaker_b message with no open turn (session opens with speaker_b, or
  two speaker_b messages in a row) gets user PLACEHOLDER; a speaker_a
  message followed by another speaker_a message (or the session's end)
  gets assistant PLACEHOLDER;
* a message's text keeps LoCoMo's text, plus " [photo: <blip_caption>]"
  when it has a caption; with --names it is prefixed by "<speaker>: ";
* questions: category 5 (adversarial) skipped; kept when str(answer)
  occurs, case-insensitively and not inside a longer word, in the text of
  at least one of its evidence messages; must_contain = that occurrence
  with the evidence text's casing; dropped when the question itself
  contains it; evidence = every mappable evidence dia_id's (session, turn),
  in order, deduplicated; asked_at = last session + 1 hour.
"""
import argparse
import glob
import json
import os
import re
import sys
from collections import Counter, defaultdict
from datetime import datetime, timedelta

DEV = {26, 30, 41, 42, 43}
HELDOUT = {44, 47, 48, 49, 50}
PLACEHOLDER = "..."
CATEGORY = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def parse_time(s):
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y")


def iso(d):
    return d.strftime("%Y-%m-%dT%H:%M:%S") + "+00:00"


def message_text(m, names):
    text = m.get("text", "").strip()
    cap = (m.get("blip_caption") or "").strip()
    if cap:
        text = f"{text} [photo: {cap}]" if text else f"[photo: {cap}]"
    if names:
        text = f"{m['speaker']}: {text}"
    return text


def pair_session(msgs, a, b, names, stats):
    """[(user, assistant)], {dia_id: (turn index, side)}."""
    turns = []   # lists [user, assistant]
    where = {}
    open_turn = None
    for m in msgs:
        text = message_text(m, names)
        if m["speaker"] == a:
            if open_turn is not None:        # a after a: close with placeholder
                open_turn[1] = PLACEHOLDER
                stats["assistant placeholders"] += 1
            open_turn = [text, None]
            turns.append(open_turn)
            where[m["dia_id"]] = (len(turns) - 1, "user")
        elif m["speaker"] == b:
            if open_turn is None:            # b first, or b after b
                turns.append([PLACEHOLDER, text])
                stats["user placeholders"] += 1
            else:
                open_turn[1] = text
                open_turn = None
            where[m["dia_id"]] = (len(turns) - 1, "assistant")
        else:
            raise ValueError(f"unknown speaker {m['speaker']!r}")
    if open_turn is not None:
        open_turn[1] = PLACEHOLDER
        stats["assistant placeholders"] += 1
    return [{"user": u, "assistant": s} for u, s in turns], where


def find_verbatim(answer, text):
    """The answer's occurrence in text (text's casing), not inside a longer word; or None."""
    pat = r"(?<![0-9A-Za-z])" + re.escape(answer) + r"(?![0-9A-Za-z])"
    m = re.search(pat, text, re.IGNORECASE)
    return m.group(0) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True, help="LoCoMo's data/multimodal_dialog/locomo10_v2 (from its repository's data/locomo10.zip)")
    ap.add_argument("--out", required=True, help="where conversations.jsonl and questions.jsonl go")
    ap.add_argument("--names", action="store_true", help="prefix each message with its speaker's name")
    ap.add_argument("--first-person", action="store_true",
                    help="keep the questions about speaker_a (the user), asked by the user: their name as I / my / me")
    ap.add_argument("--user-side-only", action="store_true",
                    help="keep only questions whose must_contain is in an evidence turn's user (speaker_a) text")
    args = ap.parse_args()

    convs, questions = [], []
    stats = Counter()
    kept = Counter()      # (split, category, kind)
    dropped = Counter()   # (category, reason)
    files = sorted(glob.glob(os.path.join(args.src, "*.json")), key=lambda p: int(os.path.basename(p).split(".")[0]))
    for path in files:
        num = int(os.path.basename(path).split(".")[0])
        split = "dev" if num in DEV else "heldout" if num in HELDOUT else None
        if split is None:
            sys.exit(f"{path}: no split for {num}")
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        a, b = d["speaker_a"], d["speaker_b"]
        cid = f"L{num}"
        numbers = sorted(int(m.group(1)) for k in d for m in [re.fullmatch(r"session_(\d+)", k)] if m)
        sessions = []
        dia = {}  # dia_id -> (session id, turn, side, text)
        for n in numbers:
            msgs = d.get(f"session_{n}") or []
            if not msgs:
                stats["empty sessions"] += 1
                continue
            sid = f"{cid}-s{len(sessions) + 1}"
            turns, where = pair_session(msgs, a, b, args.names, stats)
            for m in msgs:
                t, side = where[m["dia_id"]]
                dia[m["dia_id"]] = (sid, t, side, turns[t][side])
            at = parse_time(d[f"session_{n}_date_time"])
            sessions.append({"session": sid, "at": iso(at), "turns": turns, "_at": at})
        sessions.sort(key=lambda s: s["_at"])
        last = sessions[-1]["_at"]
        for s in sessions:
            del s["_at"]
        convs.append({"id": cid, "lang": "en",
                      "persona": f"LoCoMo conversation {num}: {a} (user) talks with {b} (assistant) over "
                                 f"{len(sessions)} sessions",
                      "split": split, "sessions": sessions})
        asked_at = iso(last + timedelta(hours=1))

        for q in d["qa"]:
            cat = q["category"]
            if cat == 5:
                dropped[(cat, "adversarial")] += 1
                continue
            if "answer" not in q:
                dropped[(cat, "no answer")] += 1
                continue
            answer = str(q["answer"]).strip()
            ids = []
            for e in q.get("evidence", []):
                for m in re.finditer(r"D:?(\d+):(\d+)", e):
                    ids.append(f"D{m.group(1)}:{m.group(2)}")
            refs, found = [], None
            for i in ids:
                if i not in dia:
                    stats["unmappable evidence ids"] += 1
                    continue
                sid, t, side, text = dia[i]
                if {"session": sid, "turn": t} not in refs:
                    refs.append({"session": sid, "turn": t})
                if found is None:
                    hit = find_verbatim(answer, text)
                    if hit:
                        found = (hit, side)
            if not refs:
                dropped[(cat, "no mappable evidence")] += 1
                continue
            if not answer or found is None:
                dropped[(cat, "answer not verbatim in evidence")] += 1
                continue
            must, side = found
            if must.lower() in ("yes", "no"):
                dropped[(cat, "yes/no answer")] += 1
                continue
            if args.user_side_only and not any(
                    must.lower() in dia[i][3].lower() for i in ids if i in dia and dia[i][2] == "user"):
                dropped[(cat, "answer only on the assistant side")] += 1
                continue
            question = q["question"].strip()
            if args.first_person:
                # The user asks about themselves: a question about the
                # other speaker (here, the assistant) has no place, and
                # the user's name becomes "I" / "my" / "me".
                if b in question or a not in question:
                    dropped[(cat, "not about the user (--first-person)")] += 1
                    continue
                question = first_person(question, a)
            if must.lower() in question.lower():
                dropped[(cat, "question contains the answer")] += 1
                continue
            kind = kind_of(cat, q["question"], answer)
            kept[(split, cat, kind, side)] += 1
            questions.append({"id": None, "conversation": cid, "lang": "en", "kind": kind,
                              "asked_at": asked_at, "question": question,
                              "answer": answer, "evidence": refs, "must_contain": [must]})

    for i, q in enumerate(questions, 1):
        q["id"] = f"q{i:04d}"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "conversations.jsonl"), "w", encoding="utf-8") as f:
        for c in convs:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    with open(os.path.join(args.out, "questions.jsonl"), "w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")

    # summary
    for sp in ("dev", "heldout"):
        cs = [c for c in convs if c["split"] == sp]
        print(f"{sp}: {len(cs)} conversations, {sum(len(c['sessions']) for c in cs)} sessions, "
              f"{sum(len(s['turns']) for c in cs for s in c['sessions'])} turns, "
              f"{sum(kept[k] for k in kept if k[0] == sp)} questions")
    print("kept by category:", {CATEGORY[c]: sum(v for k, v in kept.items() if k[1] == c) for c in (1, 2, 3, 4)})
    print("kept by split/category:", {f"{sp}/{CATEGORY[c]}": sum(v for k, v in kept.items() if k[0] == sp and k[1] == c)
                                      for sp in ("dev", "heldout") for c in (1, 2, 3, 4)})
    print("kept by kind:", dict(Counter(k[2] for k in kept.elements())))
    print("kept by evidence side of the must_contain:", dict(Counter(k[3] for k in kept.elements())))
    by_reason = defaultdict(dict)
    for (c, r), v in sorted(dropped.items()):
        by_reason[r][CATEGORY[c]] = v
    print("dropped:", dict(by_reason))
    print("stats:", dict(stats))


def first_person(question, name):
    """`question` about `name` asked by `name`: "What did Caroline
    research?" -> "What did I research?" (a voice user's grammar, not a
    grammarian's: "her" and "his" are left as they are)."""
    q = re.sub(rf"\b{re.escape(name)}'s\b", "my", question)
    q = re.sub(rf"\b{re.escape(name)}\b", "I", q)
    q = re.sub(r"\bI (is|has|was|does)\b", lambda m: {"is": "I am", "has": "I have", "was": "I was", "does": "I do"}[m.group(1)], q)
    q = re.sub(r"\b(is|has|does) I\b", lambda m: {"is": "am I", "has": "have I", "does": "do I"}[m.group(1)], q)
    return re.sub(r"\b(to|for|with|about|from|by) I\b", r"\1 me", q)


def kind_of(cat, question, answer):
    """The closest of the fixture's kinds (name, number, date, plan, preference)."""
    ql = question.lower()
    if cat == 2:
        return "date"
    if re.fullmatch(r"[\d.,]+|one|two|three|four|five|six|seven|eight|nine|ten", answer.lower()) \
            or re.match(r"how (many|much|long|old|often)\b", ql):
        return "number"
    if re.search(r"\b(favou?rite|prefer|like|likes|enjoy|enjoys|love|loves)\b", ql):
        return "preference"
    if re.search(r"\b(plan|plans|planning|going to|will|intend|hope to)\b", ql):
        return "plan"
    return "name"


if __name__ == "__main__":
    main()
