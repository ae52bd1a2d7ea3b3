import sys, time
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
def ident(batches):
    for b in batches:
        yield b
df = spark.range(100, numPartitions=100)
df.mapInArrow(ident, "id long").count()  # warm: the daemon starts
t = time.perf_counter()
df.mapInArrow(ident, "id long").count()
print("RESULT tasks=100 seconds=%.2f" % (time.perf_counter() - t))
spark.stop()
