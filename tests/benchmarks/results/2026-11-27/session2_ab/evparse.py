import json, sys, glob, collections
path = sys.argv[1]
stages = {}; tasks = collections.defaultdict(list); jobs = {}
for line in open(path):
    e = json.loads(line); ev = e["Event"]
    if ev == "SparkListenerStageCompleted":
        s = e["Stage Info"]; stages[(s["Stage ID"], s["Stage Attempt ID"])] = s
    elif ev == "SparkListenerTaskEnd":
        tasks[e["Stage ID"]].append(e)
    elif ev == "SparkListenerJobStart":
        jobs[e["Job ID"]] = (e["Submission Time"], e["Stage IDs"])
    elif ev == "SparkListenerJobEnd":
        st, ids = jobs[e["Job ID"]]; jobs[e["Job ID"]] = (st, ids, e["Completion Time"])
for jid, j in sorted(jobs.items()):
    if len(j) < 3: continue
    print(f"job {jid}: {(j[2]-j[0])/1000:.2f}s stages {j[1]}")
    for sid in j[1]:
        s = stages.get((sid, 0))
        if not s or "Submission Time" not in s: continue
        ts = tasks[sid]
        m = [t["Task Metrics"] for t in ts]
        def tot(k): return sum(x.get(k, 0) for x in m)
        sr = sum(x["Shuffle Read Metrics"]["Remote Bytes Read"] + x["Shuffle Read Metrics"]["Local Bytes Read"] for x in m)
        sw = sum(x["Shuffle Write Metrics"]["Shuffle Bytes Written"] for x in m)
        print(f"  stage {sid} {s['Stage Name'][:40]:40s} {(s['Completion Time']-s['Submission Time'])/1000:6.2f}s tasks {len(ts)} run {tot('Executor Run Time')/1000:.2f}s cpu {tot('Executor CPU Time')/1e9:.2f}s gc {tot('JVM GC Time')/1000:.2f}s deser {tot('Executor Deserialize Time')/1000:.2f} shuffleR {sr/2**20:.0f}MiB W {sw/2**20:.0f}MiB spill {tot('Disk Bytes Spilled')/2**20:.0f}MiB")
