#!/bin/bash
# Issue 14 (the library): interleaved A/B, the binary before it (e4292f8) vs after, 5 rounds:
# import of the 10M-row transit TSV (direct engine), of a 2M-row TSV through SQLite's insert
# path, generate of 30M rows (page writer), ingest of 1M feed messages.
# Data: python3 bench/gen_transit.py 10000000 /tmp/bench/transit_10000000.tsv (and 2000000),
#       python3 bench/gen_feed.py 1000000 300000 /tmp/bench/feed.jsonl
OLD=/tmp/old-target/release/liteload
NEW=/work/main/target/release/liteload
for r in 1 2 3 4 5; do
  for t in old new; do
    B=$NEW; [ $t = old ] && B=$OLD
    rm -f /tmp/bench/ab.db* /tmp/bench/gen.db* /tmp/bench/ing.db*
    /usr/bin/time -f "$r $t import-direct-10m %e s wall %U user" $B import -q --engine direct /tmp/bench/ab.db /tmp/bench/transit_10000000.tsv --table transit
    rm -f /tmp/bench/ab.db*
    /usr/bin/time -f "$r $t import-sqlite-2m %e s wall %U user" $B import -q --engine sqlite /tmp/bench/ab.db /tmp/bench/transit_2000000.tsv --table transit
    /usr/bin/time -f "$r $t generate-30m %e s wall %U user" $B generate -q /tmp/bench/gen.db --rows 30000000 --seed 9
    /usr/bin/time -f "$r $t ingest-1m %e s wall %U user" $B ingest -q /tmp/bench/ing.db /tmp/bench/feed.jsonl --table flights --key id
  done
done
