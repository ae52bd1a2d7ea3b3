cd "${INJ_ROOT:-/work/main}"
for i in 1 2 3; do
  for v in 0 2; do
    if [ $v = 0 ]; then unset XTHREADS; else export XTHREADS=$v; fi
    echo "XTHREADS=$v"; INJ_WORK=/tmp/perf python3 -m uv run --frozen python tests/benchmarks/results/2026-11-27/session2_ab/inj.py 5000000 100000 3 driver 2>&1 | grep "^{"
  done
done
