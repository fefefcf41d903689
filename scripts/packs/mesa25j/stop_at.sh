#!/bin/bash
# At 16:35 UTC (the brief: no new experiment in the last 15 minutes before 16:50): the queue cut after the entries
# already started, then STOP (mesa25i's stop_at.sh with this run's folder and time).
cd /work/m25j
while [ "$(date -u +%H%M)" -lt 1635 ]; do sleep 5; done
k=$(grep -c ' start ' q.out)
head -n $k queue.txt > queue.cut; echo STOP >> queue.cut; mv queue.cut queue.txt
echo "$(date -u +%T) cut after $k" >> stop_at.out
