#!/bin/bash
# Issue 14: the 10M-row TSV through the page writer, before (e4292f8) vs after, 9 interleaved rounds
# (the 5-round run in library_ab.txt had the after binary 6% slower on the median wall
# time with the same CPU time; this run settles whether that was noise).
OLD=/tmp/old-target/release/liteload
NEW=/work/main/target/release/liteload
for r in 1 2 3 4 5 6 7 8 9; do
  for t in old new; do
    B=$NEW; [ $t = old ] && B=$OLD
    rm -f /tmp/bench/ab.db*
    /usr/bin/time -f "$r $t import-direct-10m %e s wall %U user" $B import -q --engine direct /tmp/bench/ab.db /tmp/bench/transit_10000000.tsv --table transit
  done
done
