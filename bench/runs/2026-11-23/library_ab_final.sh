#!/bin/bash
# Issue 14, after the last refactors (run.rs, private modules, leaves.rs, non_exhaustive):
# before (e4292f8) vs after, 5 interleaved rounds of the 10M-row TSV direct import and of
# generate 30M rows.
OLD=/tmp/old-target/release/liteload
NEW=/work/main/target/release/liteload
for r in 1 2 3 4 5; do
  for t in old new; do
    B=$NEW; [ $t = old ] && B=$OLD
    rm -f /tmp/bench/ab.db* /tmp/bench/gen.db*
    /usr/bin/time -f "$r $t import-direct-10m %e s wall %U user" $B import -q --engine direct /tmp/bench/ab.db /tmp/bench/transit_10000000.tsv --table transit
    /usr/bin/time -f "$r $t generate-30m %e s wall %U user" $B generate -q /tmp/bench/gen.db --rows 30000000 --seed 9
  done
done
