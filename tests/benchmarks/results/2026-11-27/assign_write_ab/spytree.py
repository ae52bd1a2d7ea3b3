import sys, collections, re
path, depth = sys.argv[1], int(sys.argv[2]); minimum = float(sys.argv[3]) if len(sys.argv) > 3 else 0.1
prefix = sys.argv[4] if len(sys.argv) > 4 else "<module> (assign_and_write.py"
tree = collections.Counter(); total = 0
for line in open(path):
    line = line.rstrip("\n")
    if not line.startswith(prefix): continue
    stack, n = line.rsplit(" ", 1); n = int(n); total += n
    frames = [f for f in stack.split(";") if "<frozen" not in f]
    for d in range(1, min(depth, len(frames)) + 1):
        tree[tuple(frames[:d])] += n
print(f"main thread: {total/100:.2f} s")
for key in sorted(tree):
    if tree[key] / 100 >= minimum:
        print(f"{tree[key]/100:6.2f} " + "  " * (len(key) - 1) + re.sub(r"/work/wt-perf/\.venv/lib/python3\.11/site-packages/", "", key[-1]))
