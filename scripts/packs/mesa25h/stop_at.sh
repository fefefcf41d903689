#!/bin/bash
# At 05:55 UTC: no new entries (queue cut after the started ones, then STOP).
cd /work/m25h
while [ "$(date -u +%H%M)" -lt 0555 ]; do sleep 5; done
k=$(grep -c ' start ' q.out)
head -n $k queue.txt > queue.cut; echo STOP >> queue.cut; mv queue.cut queue.txt
echo "$(date -u +%T) cut after $k" >> stop_at.out
