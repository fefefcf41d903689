# the lead's re-check of attention_8x300x64 (round 1 of the final call: 1.06x): three rounds of torchcmp on it alone
for r in 1 2 3; do
  echo "=== [$SECONDS s] torchcmp attention_8x300x64 round $r"
  TC_W=/tmp/att-tc$r TC_PROFILE_UNTIL=0 TC_ONLY='attention_8x300x64' timeout 100 bash "$H/torchcmp-run.sh" 2>&1 | grep -E "^\||rror|FAIL" | cut -c1-300
done
