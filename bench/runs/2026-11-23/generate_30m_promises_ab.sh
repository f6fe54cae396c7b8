#!/bin/bash
# Interleaved: generate 30M rows of write-up 004's table with the page writer, old (90b7914) vs new.
for r in 1 2 3 4 5; do
  for t in old new; do
    rm -f /tmp/bench/gen.db*
    B=/work/main/target/release/liteload; [ $t = old ] && B=/tmp/old-target/release/liteload
    /usr/bin/time -f "$r $t %e s wall %U user" $B generate -q /tmp/bench/gen.db --rows 30000000 --seed 9
  done
done
