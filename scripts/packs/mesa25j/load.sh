#!/bin/bash
# The load average once a minute into /work/m25j/load.txt (UTC time, 1/5/15-minute averages).
while true; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)" >> /work/m25j/load.txt; sleep 60; done
