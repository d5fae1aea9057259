#!/usr/bin/env python3
"""Regenerates the catalog part of docs/events.md (everything from
"## The catalog" on) from the payload structs' doc comments in
events/src/payloads/ and the catalog in events/src/event.rs, with examples
from the golden log fixture. `--check` fails when the doc is out of date.
Run from the repository root."""
import re, glob, json, sys, os
os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
files=sorted(glob.glob('events/src/payloads/*.rs'))
structs={}; enums={}
for f in files:
    lines=open(f).read().splitlines()
    i=0
    while i<len(lines):
        l=lines[i]
        if l in ("payload! {","closed_enum! {"):
            kind=l.split('!')[0]; i+=1; doc=[]
            while lines[i].strip().startswith('///') or lines[i].strip().startswith('#['):
                if lines[i].strip().startswith('///'): doc.append(lines[i].strip()[3:].strip())
                i+=1
            m=re.match(r'\s*pub (struct|enum) (\w+) \{',lines[i]); name=m.group(2); i+=1
            body=[]
            while not re.match(r'^    \}$',lines[i]): body.append(lines[i]); i+=1
            if kind=='payload':
                fields=[]; cur=[]
                for b in body:
                    s=b.strip()
                    if s.startswith('///'): cur.append(s[3:].strip())
                    elif s.startswith('#['): pass
                    elif s.startswith('pub '):
                        fm=re.match(r'pub (\w+): (.+),$',s); fields.append((fm.group(1),fm.group(2)," ".join(cur))); cur=[]
                structs[name]=(" ".join(doc),fields)
            else:
                vals=[]; cur=[]
                for b in body:
                    s=b.strip()
                    if s.startswith('///'): cur.append(s[3:].strip())
                    else:
                        vm=re.search(r'=> "([^"]+)"',s)
                        if vm: vals.append((vm.group(1)," ".join(cur))); cur=[]
                enums[name]=(" ".join(doc),vals)
        i+=1
def ty(t):
    t=t.replace('<','&lt;').replace('>','&gt;')
    for e in enums:
        t=re.sub(r'\b'+e+r'\b','['+e+'](#'+e.lower()+')',t)
    for s in structs:
        if s in ('PlanStep','StructuralFeatures','ModelOption','ChainEntry','EvictedOutcome','NearMiss'):
            t=re.sub(r'\b'+s+r'\b','['+s+'](#'+s.lower()+')',t)
    t=t.replace('Decimal','Decimal (JSON string)')
    return t
# A catalog line: `Variant(Payload) = code, "name", version;`, the payload
# possibly boxed in the enum (`Variant(Payload => Box<Payload>) = …`).
line_re=r'\s+(\w+)\((\w+)(?: => Box<\w+>)?\) = (\d+), "([^"]+)", (\d+);'
catalog=[l for l in open('events/src/event.rs').read().splitlines() if re.match(line_re,l)]
kinds=[]
for l in catalog:
    m=re.match(line_re,l); kinds.append(m.groups())
emit={'utterance.received':'listener','intent.judged':'listener','day.activated':'listener (first utterance of a day; `engram import` through the same reactor)',
'route.decided':'router','fastpath.hit':'router','fastpath.missed':'router','pattern.matched':'router (routing slot 4)','canonical.recorded':'router (learning from `turn.completed`)','pipeline.recorded':'router','pipeline.expired':'router','pipeline.promoted':'router',
'plan.created':'planner','tool.called':'reply loop','tool.completed':'reply loop','llm.call_completed':'whichever actor made the call (planner, reply loop, judge, …)','reply.delivered':'reply loop','turn.completed':'reply loop',
'session.ended':'host (`end_session`), idle timeout, or import after a session\'s last record','eval.completed':'judge','pattern.recorded':'pattern store','pattern.evicted':'pattern store','summary.written':'summariser','graph.fact_added':'graph','graph.node_merged':'graph','feedback.received':'host','memory.forgotten':'cli (`engram forget`), host (`Runtime::forget`)','pattern.reembedded':'router (the configured embedding model changed)','stream.message_skipped':'log (a JetStream device, for a message on the stream that no engram wrote)','canonical.rejected':'router (a verdict below the learning bar on a turn the row served or taught)','pipeline.rejected':'router (as `canonical.rejected`, for a pipeline)','memory.passages_indexed':'memory (the memory indexer, at each `turn.completed`)','canonical.compared':'router (a model\'s answer to a request near a learnt phrasing, at `turn.completed`)'}
examples={}
for line in open('tests/fixtures/golden-v1/log.jsonl'):
    e=json.loads(line); examples.setdefault(e['kind'],e['payload'])
out=[]
w=out.append
w(open('docs/events.md').read().split('## The catalog')[0].rstrip()+'\n')
w("## The catalog\n")
w("| code | kind | v | emitted by |\n|---|---|---|---|")
for var,pay,code,name,ver in kinds:
    w(f"| {code} | [`{name}`](#{name.replace('.','')}) | {ver} | {emit[name]} |")
w("")
for var,pay,code,name,ver in kinds:
    doc,fields=structs[pay]
    w(f"### `{name}`\n")
    w(f"Code {code}, schema v{ver}. Emitted by: {emit[name]}.\n")
    w(doc+"\n")
    w("| field | type | meaning |\n|---|---|---|")
    for f,t,d in fields: w(f"| `{f}` | {ty(t)} | {d} |")
    w("")
    if name in examples:
        w("```json\n"+json.dumps(examples[name],ensure_ascii=False)+"\n```\n")
w("## Shared value types\n")
for s in ('PlanStep','StructuralFeatures','ModelOption','ChainEntry','EvictedOutcome','NearMiss'):
    doc,fields=structs[s]
    w(f"### {s}\n\n{doc}\n\n| field | type | meaning |\n|---|---|---|")
    for f,t,d in fields: w(f"| `{f}` | {ty(t)} | {d} |")
    w("")
w("`ToolArgs` is a JSON object (keys sorted); a string value `\"$N\"` refers to the result of step N.\n")
w("## Closed value sets\n")
for e,(doc,vals) in sorted(enums.items()):
    w(f"### {e}\n\n{doc}\n")
    for v,d in vals: w(f"* `{v}` — {d}")
    w("")
w("## Legacy schemas\n")
doc,fields=structs['PatternRecordedV1']
w("### `pattern.recorded` v1\n\n"+doc+"\n\n| field | type |\n|---|---|")
for f,t,d in fields: w(f"| `{f}` | {ty(t)} |")
w("\nUpcast to v2: every v1 field carries over; `turn`, `eval_id`, `score_confidence`, `replaces_score`, `features`, `workload` become `null` and `latency_ms` 0.\n")
w("### `canonical.recorded` v1, `canonical.rejected` v1, `fastpath.missed` v1\n\nThe v1 fields carry over; `slots` is empty (the phrasing learnt no said value: what was recorded before learning by meaning) and `near` is `null`.\n")
text="\n".join(out)
if sys.argv[1:]==['--check']:
    if open('docs/events.md').read()!=text:
        sys.exit("docs/events.md is out of date with events/src: run scripts/gen-events-doc.py")
else:
    open('docs/events.md','w').write(text)
