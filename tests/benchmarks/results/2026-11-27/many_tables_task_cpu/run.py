import os
import sys
sys.path.insert(0, os.path.join(os.environ.get("INJ_ROOT", "."), "tests", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_many_tables as b
b.DAG_FILE = b.DAG_FILE.replace('default_args={{"retries": 0}}', 'default_args={{"retries": 0, "pre_execute": pre, "post_execute": post}}').replace("from airflow_paimon.task_group import paimon_upsert", "from airflow_paimon.task_group import paimon_upsert\nfrom profhook import pre, post")
b.FLOOR_DAG_FILE = b.FLOOR_DAG_FILE.replace('default_args={{"retries": 0}}', 'default_args={{"retries": 0, "pre_execute": pre, "post_execute": post}}').replace("from airflow.sdk import DAG, TaskGroup, task", "from airflow.sdk import DAG, TaskGroup, task\nfrom profhook import pre, post")
assert "profhook" in b.DAG_FILE and "profhook" in b.FLOOR_DAG_FILE
sys.argv = ["bench_many_tables.py"] + sys.argv[1:]
b.main()
