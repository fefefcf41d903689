#!/bin/bash
# One entry at a time: queue.txt's lines (ctest entry names) in order; STOP ends.
cd /work/m25f
n=0
while true; do
  n=$((n+1))
  line=$(sed -n "${n}p" queue.txt)
  if [ -z "$line" ]; then sleep 10; n=$((n-1)); [ -e queue.stop ] && exit 0; continue; fi
  [ "$line" = STOP ] && exit 0
  echo "$(date -u +%T) start $line" >> q.out
  bash /work/m25f/entries.sh $line >> q.out 2>&1
done
