#!/bin/bash
# Starts the queue once the lead's clean-clone CI has left its release pass ("== sanitizer build" in /tmp/ci.log, written after 07:25).
cd /work/m25i
until [ /tmp/ci.log -nt /work/m25i/affected.txt ] && grep -q '^== sanitizer build' /tmp/ci.log; do sleep 10; done
echo "$(date -u +%T) CI release pass ended" >> wait_ci.out
cp queue.plan queue.txt
M25=/work/m25i WT=/work/wt-mesa25i exec bash /work/m25i/q.sh
