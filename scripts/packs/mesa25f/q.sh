#!/bin/bash
# One entry at a time: queue.txt's lines (ctest entry names) in order; STOP ends. M25: the run folder (default /work/m25f).
export M25=${M25:-/work/m25f}
cd $M25
n=0
while true; do
  n=$((n+1))
  line=$(sed -n "${n}p" queue.txt)
  if [ -z "$line" ]; then sleep 10; n=$((n-1)); [ -e queue.stop ] && exit 0; continue; fi
  [ "$line" = STOP ] && exit 0
  echo "$(date -u +%T) start $line" >> q.out
  bash $M25/entries.sh $line >> q.out 2>&1
done
