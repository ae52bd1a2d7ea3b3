"""Paimon column types as Spark SQL types (for casting a source to the table)."""
from __future__ import annotations

import re


def spark_type(paimon_type) -> str:
    """The Spark SQL type string of a pypaimon DataType."""
    sql = str(paimon_type).replace(" NOT NULL", "").strip().upper()
    base = sql.split("(", 1)[0].strip()
    simple = {"TINYINT": "tinyint", "SMALLINT": "smallint", "INT": "int", "INTEGER": "int", "BIGINT": "bigint",
              "FLOAT": "float", "DOUBLE": "double", "BOOLEAN": "boolean", "DATE": "date", "STRING": "string",
              "VARCHAR": "string", "CHAR": "string", "BYTES": "binary", "VARBINARY": "binary", "BINARY": "binary"}
    if base in simple:
        return simple[base]
    if base == "DECIMAL":
        m = re.match(r"DECIMAL\((\d+),\s*(\d+)\)", sql)
        return f"decimal({m.group(1)},{m.group(2)})" if m else "decimal(10,0)"
    if base.startswith("TIMESTAMP"):
        return "timestamp" if "LOCAL TIME ZONE" in sql else "timestamp_ntz"
    raise NotImplementedError(f"Paimon type {sql} has no Spark mapping here yet")
