"""The source of a write: a path (parquet, CSV, JSON), a Spark SQL query or a table — read, then checked
against the Paimon table's schema in one pass, before anything is written."""
from __future__ import annotations

from airflow_paimon.engine import storage
from airflow_paimon.engine.errors import ValidationError

FORMATS = ("parquet", "csv", "json")


def read_source(spark, source: dict, identifier: str):
    """A DataFrame of the source described by ``source``: {"path", "format"?, "options"?} | {"query"} | {"table"}."""
    if source.get("query"):
        return spark.sql(source["query"])
    if source.get("table"):
        return spark.table(source["table"])
    path = source.get("path")
    if not path:
        raise ValidationError(identifier, "the source names no path, query or table")
    if not storage.exists(path):
        raise ValidationError(identifier, "source path does not exist", column=None, value=path)
    fmt = (source.get("format") or _format_of(path, identifier)).lower()
    if fmt not in FORMATS:
        raise ValidationError(identifier, f"unsupported source format (use one of {FORMATS})", value=fmt)
    options = {"header": "true"} if fmt == "csv" else {}
    options.update(source.get("options", {}))
    return spark.read.format(fmt).options(**options).load(path)


def _format_of(path: str, identifier: str) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    for fmt in FORMATS:
        if name.endswith("." + fmt) or name.endswith(".jsonl") and fmt == "json":
            return fmt
    if storage.is_dir(path):
        return "parquet"
    raise ValidationError(identifier, "cannot tell the source format from the path; pass format", value=path)


def validate_and_cast(df, table, identifier: str, row_kind_column: str | None = None):
    """The source as the table's columns and types plus its row kind (``_kind``) and input order
    (``_order``) — or a ValidationError naming the first bad column and value.

    One Spark aggregation finds, per column, the first value that does not cast to the table's type, per
    primary-key column whether a null exists, the first unknown operation and the number of retractions.
    """
    from pyspark.sql import functions as F

    from airflow_paimon.engine.assign.assigner import KIND, ORDER
    from airflow_paimon.engine.assign.rowkind import ROW_KINDS
    from airflow_paimon.spark.types import spark_type

    columns = {c.lower(): c for c in df.columns}
    fields = list(table.table_schema.fields)
    names = [f.name for f in fields]
    missing = [n for n in names if n.lower() not in columns]
    if missing:
        raise ValidationError(identifier, f"source lacks this column (source has {df.columns})", column=missing[0])
    if row_kind_column and row_kind_column.lower() not in columns:
        raise ValidationError(identifier, "source lacks the row kind column", column=row_kind_column)
    allowed = {n.lower() for n in names} | ({row_kind_column.lower()} if row_kind_column else set())
    extra = [c for c in df.columns if c.lower() not in allowed]
    if extra:
        raise ValidationError(identifier, f"source column is not in the table (table has {names})", column=extra[0])

    checks, casts = [], []
    for f in fields:
        src = F.col(f"`{columns[f.name.lower()]}`")
        target = spark_type(f.type)
        cast = src.try_cast(target)
        casts.append(cast.alias(f.name))
        bad = F.when(src.isNotNull() & cast.isNull(), src.cast("string"))
        checks.append(F.first(bad, ignorenulls=True).alias(f"bad::{f.name}"))
        if f.name in table.primary_keys:
            checks.append(F.max(src.isNull().cast("int")).alias(f"null::{f.name}"))
    kind = F.lit(0).cast("tinyint")
    if row_kind_column:
        op = F.col(f"`{columns[row_kind_column.lower()]}`")
        for text, code in ROW_KINDS.items():
            kind = F.when(op == text, F.lit(code).cast("tinyint")).otherwise(kind)
        known = op.isin(*ROW_KINDS)
        checks.append(F.first(F.when(~known | op.isNull(), F.coalesce(op, F.lit("null"))), ignorenulls=True)
                      .alias("bad::op"))
        checks.append(F.sum(op.isin("-U", "-D").cast("int")).alias("retracts::"))
    checks.append(F.count(F.lit(1)).alias("rows::"))
    row = df.agg(*checks).collect()[0].asDict()
    if row.get("bad::op") is not None:
        raise ValidationError(identifier, f"row kind must be one of {list(ROW_KINDS)}", column=row_kind_column,
                              value=row["bad::op"])
    check_retractions(table, identifier, row.get("retracts::") or 0)
    for f in fields:
        if f.name in table.primary_keys and row.get(f"null::{f.name}"):
            raise ValidationError(identifier, "primary key column is null", column=f.name, value=None)
        if row.get(f"bad::{f.name}") is not None:
            raise ValidationError(identifier, f"value does not fit the column type {f.type}", column=f.name,
                                  value=row[f"bad::{f.name}"])
    return df.select(*casts, kind.alias(KIND), F.monotonically_increasing_id().alias(ORDER)), row["rows::"]


def check_retractions(table, identifier: str, retracts: int) -> None:
    """-U/-D rows where the merge engine refuses them, as Paimon does (unless the table ignores deletes)."""
    options = table.table_schema.options
    engine = str(options.get("merge-engine", "deduplicate"))
    ignore = str(options.get("ignore-delete", "false")).lower() == "true"
    refused = {"first-row": True,
               "partial-update": str(options.get("partial-update.remove-record-on-delete", "false")).lower() != "true"}
    if retracts and refused.get(engine) and not ignore:
        raise ValidationError(identifier, f"merge-engine {engine} cannot take -U/-D rows ({retracts} in the source); "
                              "set 'ignore-delete' = 'true' to drop them", column="merge-engine", value=engine)
