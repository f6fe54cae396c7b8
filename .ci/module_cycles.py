"""Import circles among the modules (files) of each crate given: a module uses another
when its code (tests left out) names it by a `crate::` or `super::` path; a module and
its own parent or child are the module tree, not a circle. Prints each circle and exits
1 if there is one.

    python3 .ci/module_cycles.py crates/core/src crates/btree/src ...
"""
import os, re, sys
from collections import defaultdict

def modules(src):
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith('.rs'):
                p = os.path.join(root, f)
                rel = os.path.relpath(p, src)[:-3]
                parts = rel.split(os.sep)
                if parts[-1] in ('mod', 'lib', 'main'):
                    parts = parts[:-1]
                mods[tuple(parts)] = p
    return mods

def strip_tests(text):
    # Drop #[cfg(test)] mod tests { ... } blocks (dev-only edges).
    out, i = [], 0
    for m in re.finditer(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{', text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {'{': 1, '}': -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return ''.join(out)

def resolve(mods, path):
    # Longest prefix of path that is a module.
    for k in range(len(path), 0, -1):
        if tuple(path[:k]) in mods:
            return tuple(path[:k])
    return None

def edges(src):
    mods = modules(src)
    g = defaultdict(set)
    for m, p in mods.items():
        text = strip_tests(open(p).read())
        text = re.sub(r'//[^\n]*', '', text)
        for pm in re.finditer(r'\b(crate|super)((?:::\w+)+)', text):
            head, rest = pm.group(1), pm.group(2).split('::')[1:]
            if head == 'crate':
                base = []
            else:
                # super of a file module m is its parent; nested super::super climbs more
                base = list(m[:-1])
                while rest and rest[0] == 'super':
                    base = base[:-1]
                    rest = rest[1:]
            target = resolve(mods, base + rest)
            if target is None or target == m:
                continue
            # An edge to an ancestor (a parent's re-exports) or from a parent to its child
            # is the module tree, not a circle.
            if m[:len(target)] == target or target[:len(m)] == m:
                continue
            g[m].add(target)
    return mods, g

def cycles(g):
    index, low, stack, on, out = {}, {}, [], set(), []
    n = [0]
    def sc(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                sc(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1:
                out.append(comp)
    sys.setrecursionlimit(10000)
    for v in list(g):
        if v not in index:
            sc(v)
    return out

if __name__ == '__main__':
    bad = 0
    for src in sys.argv[1:]:
        mods, g = edges(src)
        for comp in cycles(g):
            bad += 1
            print(src, ' <-> '.join('/'.join(c) or 'lib' for c in sorted(comp)))
    sys.exit(1 if bad else 0)
