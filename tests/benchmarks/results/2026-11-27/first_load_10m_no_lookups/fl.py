import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests/benchmarks")
import bench_batch_size as b
work = Path(tempfile.mkdtemp(prefix="fl-"))
r = b.first_load(int(sys.argv[1]), work, 4, log=lambda *a: None)
print(json.dumps(r))
