PY=$1
CONF=$(/work/main/.venv/bin/python -c "
import sys
from airflow_paimon.spark.submit import submit_conf
print(' '.join(f'--conf {k}={v}' for k, v in submit_conf('$PY').items() if ' ' not in v))")
PATH=/work/main/.venv/bin:$PATH /work/main/.venv/bin/spark-submit --master local[2] $CONF --conf spark.pyspark.driver.python=/work/main/.venv/bin/python --conf spark.python.worker.reuse=false /tmp/zipab/driver.py 2>/dev/null | grep RESULT
