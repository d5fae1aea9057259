#!/usr/bin/env python3
"""Checks two structural rules over the workspace's Rust sources.

1. No function outside test code is longer than --max-fn-lines (default 100)
   lines, counted from the line of its `fn` keyword to the line of its body's
   closing brace (closures count toward the enclosing fn; nested fns are also
   counted on their own). A function that long does too many things to review
   or test; split it.
2. No import cycle between the modules of one crate (each .rs file under
   src/ is a module). A module depends on what its non-test code names through
   `use` declarations and through paths in code that start with `crate::`,
   `self::`, `super::` or a name a `use` imported, resolved through re-exports
   (`pub use`, globs, imports seen via `super::`) to the module defining the
   item. `mod child;`, `pub use` re-exports and a parent's bare `child::x`
   paths are structure, not dependencies. Modules in a cycle can't be
   understood, tested or moved on their own.

Test code (`#[cfg(test)]` items, `#[test]` / `#[tokio::test]`-style fns,
`proptest!` blocks) counts for neither rule. Crates are the top-level folders
with a Cargo.toml and a src/ (not fuzz/, target/), plus the facade's src/;
only their src/ is scanned. A small lexer skips comments (nested), strings,
raw/byte strings and char literals (not lifetimes) so braces match.

Usage: scripts/check-structure.py [--max-fn-lines N] [--report] [PATH...]
Prints findings; exit status 1 if there are any, 0 otherwise. Stdlib only.
"""
import argparse
import re
import sys
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


TOKEN = re.compile(r"""
    (?P<space>\s+) | (?P<comment>//[^\n]*) | (?P<block>/\*)
  | (?P<lit>(?:br|cr|r)(?P<hashes>\#*)"[\s\S]*?"(?P=hashes)      # raw strings
      | [bc]?"(?:\\[\s\S]|[^"\\])*"                              # strings
      | b?'(?:\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|.)|[^\\\n])'  # chars, not lifetimes
      | \d\w*)
  | (?P<lt>'[^\W\d]\w*)                                          # 'a 'static '_ 'label
  | (?P<id>r\#[^\W\d]\w* | [^\W\d]\w*)
  | (?P<p>::|->|=>|.)""", re.X)


def lex(src):
    """Tokens (kind, text, line); kind is 'id', 'lt' (lifetime), 'lit' or 'p'.
    Comments (nested /* */ too) are dropped; literals keep no text."""
    toks, pos, line = [], 0, 1
    while pos < len(src):
        m = TOKEN.match(src, pos)
        kind, end = m.lastgroup, m.end()
        if kind == 'block':
            depth = 1
            while depth and end < len(src):
                nxt = min((i for i in (src.find('/*', end), src.find('*/', end)) if i >= 0),
                          default=len(src))
                depth += 1 if src.startswith('/*', nxt) else -1
                end = nxt + 2
        elif kind not in ('space', 'comment'):
            text = 'lit' if kind == 'lit' else m.group()
            toks.append((kind, text[2:] if text.startswith('r#') else text, line))
        line += src.count('\n', pos, end)
        pos = end
    return toks


def match_brackets(toks):
    pairs, stack = {}, []
    for k, (kind, t, _) in enumerate(toks):
        if kind == 'p' and t in ('(', '[', '{'):
            stack.append(k)
        elif kind == 'p' and t in (')', ']', '}') and stack:
            pairs[stack.pop()] = k
    return pairs


def header_end(toks, pairs, k, at_comma=False):
    """From k, the index of the first `{`, `;` or unmatched closer (or, with
    at_comma, `,`) outside (), [] and <> groups: where an item's header ends."""
    angle = 0
    while k < len(toks):
        kind, t, _ = toks[k]
        if kind == 'p':
            if t in ('(', '[') or (t == '{' and angle):
                k = pairs.get(k, k)
            elif t in ('<', '>'):
                angle = max(0, angle + (1 if t == '<' else -1))
            elif t in ('{', ';', ')', ']', '}') or (at_comma and t == ',' and not angle):
                return k
        k += 1
    return len(toks) - 1


def find_body(toks, pairs, k):
    """The `{` opening the body of the item whose header starts at k, or None."""
    k = header_end(toks, pairs, k)
    return k if toks[k][1] == '{' else None


def item_end(toks, pairs, k):
    """Index of the last token of the item, statement or field starting at k."""
    k = header_end(toks, pairs, k, at_comma=True)
    return pairs.get(k, k) if toks[k][1] in ('{', ';') else k - 1


def is_test_attr(attr):
    path = []
    for kind, t, _ in attr:
        if kind == 'id':
            path.append(t)
        elif t != '::':
            break
    if path == ['cfg']:  # cfg(test), cfg(all(test, unix)); not cfg(not(test))
        texts = [t for _, t, _ in attr]
        return any(t == 'test' and texts[i - 2:i] != ['not', '(']
                   for i, t in enumerate(texts))
    return bool(path) and path[-1] == 'test'  # test, tokio::test, actix_rt::test


def test_mask(toks, pairs):
    """Per token: True if it is test code. Also the names of `#[cfg(test)] mod x;`."""
    n, mask, test_mods, k = len(toks), [False] * len(toks), set(), 0
    while k < n:
        kind, t, _ = toks[k]
        end = None
        if kind == 'p' and t == '#':
            inner = k + 1 < n and toks[k + 1][1] == '!'
            b = k + 2 if inner else k + 1
            if b < n and toks[b][1] == '[' and b in pairs:
                if is_test_attr(toks[b + 1:pairs[b]]):
                    j = pairs[b] + 1
                    while j + 1 < n and toks[j][1] == '#' and toks[j + 1][1] == '[':
                        j = pairs.get(j + 1, j) + 1
                    end = n - 1 if inner else item_end(toks, pairs, j)
                    if toks[j][1] == 'mod' and end == j + 2 and toks[end][1] == ';':
                        test_mods.add(toks[j + 1][1])
        elif kind == 'id' and t == 'proptest' and k + 2 < n and toks[k + 1][1] == '!':
            end = pairs.get(k + 2)
        if end is not None:
            mask[k:end + 1] = [True] * (end + 1 - k)
            k = end
        k += 1
    return mask, test_mods


def parse_use_tree(toks, k, prefix):
    """Leaves of the use tree at k as (segments, bound name or None for a glob,
    line); returns (leaves, index after the tree)."""
    segs = list(prefix)
    while k < len(toks):
        kind, t, line = toks[k]
        if t == '{':
            leaves, k = [], k + 1
            while k < len(toks) and toks[k][1] != '}':
                sub, j = parse_use_tree(toks, k, segs)
                leaves, k = leaves + sub, max(j, k + 1)
                if toks[k][1] == ',':
                    k += 1
            return leaves, k + 1
        if t == '*':
            return [(segs, None, line)], k + 1
        if t == '::' or t == '$':
            k += 1
            continue
        if kind != 'id':
            return [], k
        k += 1
        if t != 'self' or not segs:
            segs.append(t)
        if k < len(toks) and toks[k][1] == '::':
            k += 1
            continue
        name = segs[-1]
        if k + 1 < len(toks) and toks[k][1] == 'as':
            name, k = toks[k + 1][1], k + 2
        return [(segs, name, line)], k
    return [], k


class Source:
    """One .rs file: its functions and the module-level facts rule 2 needs."""

    def __init__(self, path, modpath):
        self.path, self.modpath = path, modpath
        toks = lex(path.read_text(encoding='utf-8', errors='replace'))
        pairs = match_brackets(toks)
        mask, self.test_mods = test_mask(toks, pairs)
        self.fns = []      # (qualified name, line, length)
        self.uses = []     # (segments, bound name, line, scope, is_pub, module-level)
        self.refs = []     # (segments, line, scope): paths in code
        self.defs = set()  # names of items defined here
        self.inline_mods = set()
        scopes = []        # (last token index, kind, name)
        n, k = len(toks), 0
        while k < n:
            while scopes and k > scopes[-1][0]:
                scopes.pop()
            kind, t, line = toks[k]
            prev = toks[k - 1][1] if k else ''
            nxt = toks[k + 1] if k + 1 < n else ('', '', 0)
            scope = modpath + tuple(s[2] for s in scopes if s[1] == 'mod')
            if mask[k] or kind != 'id':
                k += 1
                continue
            if t in ('fn', 'struct', 'enum', 'union', 'type', 'const', 'static',
                     'trait', 'mod') and nxt[0] == 'id':
                self.defs.add(nxt[1])
            if t == 'fn' and nxt[0] == 'id':
                body = find_body(toks, pairs, k + 2)
                if body is not None:
                    end = pairs.get(body, n - 1)
                    owner = scopes[-1] if scopes and scopes[-1][1] in ('impl', 'trait') else None
                    name = f'{owner[2]}::{nxt[1]}' if owner else nxt[1]
                    self.fns.append((name, line, toks[end][2] - line + 1))
                    scopes.append((end, 'fn', nxt[1]))
                k += 2
                continue
            if (t == 'trait' and nxt[0] == 'id') or (
                    t == 'impl' and prev in ('', '}', ';', '{', ']', 'unsafe', 'default')):
                body = find_body(toks, pairs, k + 1)
                if body is not None:
                    label = nxt[1] if t == 'trait' else impl_name(toks[k + 1:body])
                    scopes.append((pairs.get(body, n - 1), t, label))
                    k = body + 1
                    continue
            elif t == 'mod' and nxt[0] == 'id' and k + 2 < n and toks[k + 2][1] == '{':
                scopes.append((pairs.get(k + 2, n - 1), 'mod', nxt[1]))
                self.inline_mods.add(scope[len(modpath):] + (nxt[1],))
            elif t == 'macro_rules' and nxt[1] == '!' and k + 2 < n:
                self.defs.add(toks[k + 2][1])
            elif t == 'use' and nxt[1] != '<':
                is_pub = prev == 'pub' or (prev == ')' and 'pub' in
                                           [x[1] for x in toks[max(0, k - 6):k]])
                at_module_level = not scopes or scopes[-1][1] == 'mod'
                leaves, k = parse_use_tree(toks, k + 1, [])
                for segs, bound, ln in leaves:
                    self.uses.append((segs, bound, ln, scope, is_pub, at_module_level))
                continue
            elif nxt[1] == '::' and prev not in ('::', '.'):
                segs, j = [t], k
                while j + 2 < n and toks[j + 1][1] == '::' and toks[j + 2][0] == 'id':
                    segs.append(toks[j + 2][1])
                    j += 2
                self.refs.append((segs, line, scope))
                k = j
            k += 1


def impl_name(header):
    """The self type's name in `impl<..> Trait<..> for path::Type<..> where ..`."""
    depth, names = 0, []
    for kind, t, _ in header:
        if t == '<':
            depth += 1
        elif t == '>':
            depth -= 1
        elif depth == 0 and kind == 'id':
            if t == 'for':
                names = []
            elif t == 'where':
                break
            elif t not in ('dyn', 'mut', 'unsafe', 'const'):
                names.append(t)
    return names[-1] if names else '?'


class Crate:
    def __init__(self, label, src_dir):
        self.label, self.src_dir, self.files, test_files = label, src_dir, {}, set()
        for path in sorted(src_dir.rglob('*.rs')):
            parts = path.relative_to(src_dir).with_suffix('').parts
            if parts in (('lib',), ('main',)) or parts[-1] == 'mod':
                parts = parts[:-1] if parts[-1] == 'mod' else ()
            self.files[parts] = Source(path, parts)
        for f in self.files.values():  # files declared by `#[cfg(test)] mod x;`
            test_files.update(f.modpath + (m,) for m in f.test_mods)
        for m in test_files:
            self.files.pop(m, None)
        self.module_of = {m: m for m in self.files}  # inline mods -> their file
        self.bindings, self.globs = {}, {}
        for f in self.files.values():
            self.module_of.update((f.modpath + m, f.modpath) for m in f.inline_mods)
            for segs, bound, _, scope, is_pub, top in f.uses:
                if top and bound is None:
                    self.globs.setdefault(scope, []).append(segs)
                elif top:
                    self.bindings.setdefault(scope, {})[bound] = (segs, scope, is_pub)

    def resolve(self, segs, scope, depth=0, in_code=False):
        """The module (file) defining what the path names, or None if it's
        outside the crate (std, other crates) or not a path to an item. A path
        in code counts only if it starts with crate/self/super or a name a
        private `use` imported (`use crate::foo;` .. `foo::x()`), not with a
        child module's name: parents may reach into their children."""
        if not segs or depth > 8:
            return None
        first, rest = segs[0], list(segs[1:])
        bound = self.bindings.get(scope, {}).get(first)
        if in_code and first not in ('crate', 'self', 'super') and not (bound and not bound[2]):
            return None
        if first == 'crate':
            base = ()
        elif first in ('self', 'super'):
            base, rest = scope, list(segs)
            rest = rest[1:] if rest[0] == 'self' else rest
            while rest and rest[0] == 'super':
                base, rest = base[:-1], rest[1:]
        elif scope + (first,) in self.module_of:
            base, rest = scope, list(segs)
        elif bound:  # `use crate::foo;` .. `foo::x`
            return self.resolve(bound[0] + rest, bound[1], depth + 1)
        else:
            return None
        path = base + tuple(rest)
        i = next(i for i in range(len(path), -1, -1) if path[:i] in self.module_of)
        target, rest = path[:i], path[i:]
        if rest and rest[0] not in self.files[self.module_of[target]].defs:
            bound = self.bindings.get(target, {}).get(rest[0])
            if bound:  # re-exported or imported there: follow it
                return self.resolve(bound[0] + list(rest[1:]), bound[1], depth + 1)
            for gsegs in self.globs.get(target, []):
                g = self.resolve(gsegs, target, depth + 1)
                exported = self.bindings.get(g, {}).get(rest[0], (0, 0, False))[2]
                if g is not None and g != target and (rest[0] in self.files[g].defs or exported):
                    return self.resolve(['crate', *g, *rest], (), depth + 1)
        return self.module_of[target]

    def edges(self):
        """{(from, to): (file, line)} of the first reference making each edge."""
        found = {}
        for f in self.files.values():
            refs = [(s, ln, sc, False) for s, _, ln, sc, is_pub, _ in f.uses if not is_pub]
            for segs, line, scope, in_code in refs + [r + (True,) for r in f.refs]:
                to = self.resolve(segs, scope, in_code=in_code)
                if to is not None and to != f.modpath:
                    where = (f.path.relative_to(self.src_dir).as_posix(), line)
                    found.setdefault((f.modpath, to), where)
        return found


def tarjan(nodes, adj):
    """Strongly connected components of the graph."""
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:  # v is the root of an SCC: pop it
            scc = set()
            while v not in scc:
                scc.add(stack.pop())
            on.difference_update(scc)
            sccs.append(scc)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sccs


def closed_walk(scc, adj):
    """A walk from the first module through every module of the SCC and back."""
    start = min(scc)
    walk, seen = [start], {start}
    while True:
        targets = (scc - seen) or {start}
        prev, queue = {walk[-1]: None}, deque([walk[-1]])
        while queue:
            v = queue.popleft()
            if v in targets and v != walk[-1]:
                break
            for w in sorted(adj.get(v, ())):
                if w in scc and w not in prev:
                    prev[w] = v
                    queue.append(w)
        path = []
        while v != walk[-1]:
            path.append(v)
            v = prev[v]
        walk += reversed(path)
        seen.update(path)
        if walk[-1] == start:
            return walk


def name(modpath):
    return '::'.join(modpath) or 'crate'


def cycles(crate):
    edges = crate.edges()
    adj = {}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
    found = []
    for scc in tarjan(crate.files.keys(), adj):
        if len(scc) < 2:
            continue
        walk = closed_walk(scc, adj)
        steps = list(dict.fromkeys(zip(walk, walk[1:])))
        say = lambda e: f'{edges[e][0]}:{edges[e][1]} uses {name(e[1])}'
        line = (f'{crate.label}: cycle: {" -> ".join(name(m) for m in walk)} '
                f'({"; ".join(say(e) for e in steps)})')
        others = sorted(e for e in edges if e[0] in scc and e[1] in scc and e not in steps)
        if others:
            line += '\n    other edges in the cycle: ' + '; '.join(say(e) for e in others)
        found.append(line)
    return found


def discover():
    """Crate directories: top-level folders with Cargo.toml and src/, and the root."""
    dirs = [d for d in sorted(ROOT.iterdir()) if d.is_dir() and d.name not in ('fuzz', 'target')
            and (d / 'Cargo.toml').is_file() and (d / 'src').is_dir()]
    return dirs + ([ROOT] if (ROOT / 'src').is_dir() else [])


def crate_dir_of(path):
    for d in [path, *path.parents]:
        if (d / 'Cargo.toml').is_file() and (d / 'src').is_dir():
            return d
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--max-fn-lines', type=int, default=100)
    ap.add_argument('--report', action='store_true',
                    help='also summarise the longest functions and the counts')
    ap.add_argument('paths', nargs='*', help='crate folders or folders/files inside them')
    args = ap.parse_args()
    targets = []
    for p in args.paths or [str(d / 'src') for d in discover()]:
        path = Path(p) if Path(p).exists() else ROOT / p
        crate_dir = crate_dir_of(path.resolve()) if path.exists() else None
        if crate_dir is None:
            sys.exit(f'check-structure: {p}: no such crate folder (Cargo.toml and src/)')
        targets.append((crate_dir, path.resolve()))
    crates = {d: Crate(d.name if d != ROOT else 'src', d / 'src') for d, _ in targets}

    long_fns, all_fns, files = [], [], 0
    for crate_dir, crate in crates.items():
        wanted = [p for d, p in targets if d == crate_dir]
        for f in crate.files.values():
            if not any(f.path == p or p in f.path.parents for p in wanted):
                continue
            files += 1
            rel = f.path.relative_to(ROOT).as_posix()
            all_fns += [(length, rel, line, fn) for fn, line, length in f.fns]
    for length, rel, line, fn in sorted(all_fns, key=lambda x: (x[1], x[2])):
        if length > args.max_fn_lines:
            long_fns.append(f'{rel}:{line}: fn {fn} is {length} lines (max {args.max_fn_lines})')
    found_cycles = [c for crate in crates.values() for c in cycles(crate)]
    for finding in long_fns + found_cycles:
        print(finding)
    if args.report:
        print(f'\nlongest functions (max {args.max_fn_lines}):')
        for length, rel, line, fn in sorted(all_fns, key=lambda x: (-x[0], x[1], x[2]))[:15]:
            print(f'  {length:5}  {rel}:{line}: fn {fn}')
        print(f'\n{files} files, {len(all_fns)} fns, {len(long_fns)} over {args.max_fn_lines} '
              f'lines, {len(found_cycles)} module cycles')
    return 1 if long_fns or found_cycles else 0


if __name__ == '__main__':
    sys.exit(main())
