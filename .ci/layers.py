"""The library's layers: docs/ARCHITECTURE.md lists every module of crates/core/src in
a fenced block marked `layers`, one layer after another, the lowest first:

    name: module module ...
          module ...          (a line that starts with a space goes on the layer above)

A module may use (by a `crate::` or `super::` path, tests left out, as in
module_cycles.py) a module of its own layer or of a lower one, never of a higher one.
Prints each arrow that points up, each module that the list misses and each name in it
that is no module, and exits 1 if there is any.

    python3 .ci/layers.py docs/ARCHITECTURE.md crates/core/src
"""
import os, re, sys

sys.path.insert(0, os.path.dirname(__file__))
from module_cycles import edges  # noqa: E402


def layers(doc):
    text = open(doc).read()
    m = re.search(r'```layers\n(.*?)```', text, re.S)
    if not m:
        sys.exit(f'{doc}: no ```layers block')
    out = []
    for line in m.group(1).splitlines():
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        if line[0].isspace():
            out[-1][1].extend(line.split())
        else:
            name, _, rest = line.partition(':')
            out.append((name.strip(), rest.split()))
    return out


def main(doc, src):
    listed = layers(doc)
    mods, g = edges(src)
    name = lambda m: '/'.join(m) or 'lib'
    layer_of, bad = {}, 0
    for i, (layer, members) in enumerate(listed):
        for mod in members:
            if mod in layer_of:
                print(f'{doc}: {mod} is listed twice')
                bad += 1
            layer_of[mod] = i
    present = {name(m) for m in mods}
    for mod in sorted(present - layer_of.keys()):
        print(f'{doc}: module {mod} ({mods[tuple(mod.split("/")) if mod != "lib" else ()]}) is in no layer')
        bad += 1
    for mod in sorted(layer_of.keys() - present):
        print(f'{doc}: {mod} is listed but is no module of {src}')
        bad += 1
    for a in sorted(g, key=name):
        for b in sorted(g[a], key=name):
            la, lb = layer_of.get(name(a)), layer_of.get(name(b))
            if la is not None and lb is not None and lb > la:
                print(f'{name(a)} ({listed[la][0]}) uses {name(b)} ({listed[lb][0]}), a higher layer')
                bad += 1
    return bad


if __name__ == '__main__':
    sys.exit(1 if main(sys.argv[1], sys.argv[2]) else 0)
