#!/bin/bash
# At 08:45 UTC: no new entries (queue cut after the started ones, then STOP); mesa25h's stop_at.sh with this run's folder and time.
cd /work/m25i
while [ "$(date -u +%H%M)" -lt 0845 ]; do sleep 5; done
k=$(grep -c ' start ' q.out)
head -n $k queue.txt > queue.cut; echo STOP >> queue.cut; mv queue.cut queue.txt
echo "$(date -u +%T) cut after $k" >> stop_at.out
