#!/bin/bash
# Interleaved A/B: old (90b7914) vs new direct import of the 10M-row TSV, --verify, and sqlite3 .import.
SRC=/tmp/bench/transit_10000000.tsv
OLD=/tmp/old-target/release/liteload
NEW=/work/main/target/release/liteload
for r in 1 2 3; do
  for t in old new newverify sqlite3; do
    rm -f /tmp/bench/ab.db
    case $t in
      old) cmd="$OLD import -q --engine direct /tmp/bench/ab.db $SRC --table transit";;
      new) cmd="$NEW import -q --engine direct /tmp/bench/ab.db $SRC --table transit";;
      newverify) cmd="$NEW import -q --engine direct --verify /tmp/bench/ab.db $SRC --table transit";;
      sqlite3) cmd="sqlite3 /tmp/bench/ab.db -cmd .mode\ tabs";;
    esac
    s=$(date +%s.%N)
    if [ $t = sqlite3 ]; then sqlite3 /tmp/bench/ab.db -cmd ".mode tabs" ".import $SRC transit"; else $cmd; fi
    e=$(date +%s.%N)
    n=$(sqlite3 /tmp/bench/ab.db "select count(*) from transit")
    echo "$r $t $(echo "$e - $s" | bc) rows=$n"
  done
done
