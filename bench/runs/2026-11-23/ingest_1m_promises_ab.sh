#!/bin/bash
# Interleaved: ingest of 1M flight-feed messages (bench/gen_feed.py 1000000 300000), old (90b7914) vs new.
F=/tmp/bench/feed.jsonl
for r in 1 2 3 4 5; do
  for t in old new; do
    rm -f /tmp/bench/ing.db*
    B=/work/main/target/release/liteload; [ $t = old ] && B=/tmp/old-target/release/liteload
    /usr/bin/time -f "$r $t %e s wall %U user" $B ingest -q /tmp/bench/ing.db $F --table flights --key id
  done
done
