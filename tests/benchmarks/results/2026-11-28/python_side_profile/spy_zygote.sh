#!/bin/bash
# wait for a Connect zygote, then py-spy it and its forks until it exits
OUT=$1
while true; do
  Z=$(pgrep -f "connect_daemon --zygote" | head -1)
  [ -n "$Z" ] && break
  sleep 0.5
done
echo "zygote $Z"
/work/main/.venv/bin/py-spy record --subprocesses --pid $Z --rate 50 --format raw -o $OUT --nonblocking 2>&1 | tail -3
