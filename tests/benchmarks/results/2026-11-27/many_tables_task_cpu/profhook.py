import cProfile, json, os, resource, time
_state = {}
OUT = os.environ.get("PROFHOOK_OUT", "task_cpu")

def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def pre(context):
    _state["cpu"], _state["wall"] = _cpu(), time.monotonic()
    _state["prof"] = p = cProfile.Profile()
    p.enable()

def post(context, result=None):
    p = _state.pop("prof", None)
    if p is None:
        return
    p.disable()
    os.makedirs(OUT, exist_ok=True)
    ti = context["ti"]
    name = f"{ti.dag_id}.{ti.task_id}.{os.getpid()}"
    p.dump_stats(os.path.join(OUT, name + ".prof"))
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump({"task": ti.task_id, "execute_cpu": _cpu() - _state["cpu"], "execute_wall": time.monotonic() - _state["wall"],
                   "process_cpu": _cpu()}, f)
