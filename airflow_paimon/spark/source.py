"""The source of a write: a path (parquet, CSV, JSON), a Spark SQL query or a table — read, then checked
against the Paimon table's schema in one pass, before anything is written."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyarrow as pa
from pypaimon.schema.data_types import PyarrowFieldParser

from airflow_paimon.engine.files import storage
from airflow_paimon.engine.errors import SHOWN_CHARS, ValidationError

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable

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
    reader = spark.read.format(fmt).options(**options)
    schema = _parquet_file_schema(path, identifier) if fmt == "parquet" and not options else None
    return (reader.schema(schema) if schema is not None else reader).load(path)


def _parquet_file_schema(path: str, identifier: str):
    """A single parquet file's schema as Spark's, from its footer, so Spark skips its own inference (a
    planning job: 0.1 s of a 1.3 s assign-and-write). None — let Spark infer — for directories and for any
    type Spark might read differently than pyarrow declares it. A footer that is not parquet, or column names
    equal but for case, are refused here."""
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import from_arrow_schema

    if storage.is_dir(path):
        return None
    fs, local = storage.filesystem(path)
    try:
        schema = pq.read_schema(local, filesystem=fs)
    except pa.ArrowInvalid as e:  # the bytes are there but are no parquet footer (OSError: reading failed, retried)
        raise ValidationError(identifier, f"source file is corrupt or not parquet ({e})", value=path) from None
    check_distinct_columns(schema.names, identifier)
    plain = (pa.types.is_boolean, pa.types.is_signed_integer, pa.types.is_floating, pa.types.is_string,
             pa.types.is_binary, pa.types.is_date32, pa.types.is_decimal)
    for f in schema:
        timestamp = pa.types.is_timestamp(f.type) and f.type.unit in ("ms", "us")
        if not (timestamp or any(check(f.type) for check in plain)):
            return None
    return from_arrow_schema(schema)


def _format_of(path: str, identifier: str) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    for fmt in FORMATS:
        if name.endswith("." + fmt) or name.endswith(".jsonl") and fmt == "json":
            return fmt
    if storage.is_dir(path):
        return "parquet"
    raise ValidationError(identifier, "cannot tell the source format from the path; pass format", value=path)


def arrow_schema(df) -> pa.Schema:
    """The source's columns as Arrow types (for schema evolution), each naming its Spark type; one without an
    Arrow type as null (engine/table/schema_evolution.py refuses to add it, naming the Spark type)."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for f in df.schema.fields:
        try:
            arrow = to_arrow_type(f.dataType, timezone="UTC")
        except Exception:  # noqa: BLE001 - pyspark raises its own error types for unsupported types
            arrow = pa.null()
        fields.append(pa.field(f.name, arrow, metadata={"spark_type": f.dataType.simpleString()}))
    return pa.schema(fields)


def validate_and_cast(df, table: FileStoreTable, identifier: str, row_kind_column: str | None = None,
                      absent: tuple[str, ...] = ()):
    """The source as the table's columns and types plus its row kind (``_row_kind``) and input order
    (``_order``). Missing or extra columns are refused here; every per-row check (a value that does not
    cast to the table's type, a null primary key, an unknown row kind, a retraction the merge engine
    refuses) is a ``raise_error`` inside the same projection, so the write pipeline's first stage fails on
    the first bad row — before its first shuffle, so before any task stages or writes anything — without a
    separate pass over the source. Run the pipeline inside ``validation_errors()``. ``absent``: table columns
    the source may lack (another writer added them after this run planned its schema), written as nulls.
    """
    from airflow_paimon.engine.assign.assigner import ROW_KIND, ORDER
    from airflow_paimon.engine.codec.kinds import ROW_KINDS
    from airflow_paimon.spark.types import spark_type

    check_distinct_columns(df.columns, identifier)
    columns = {c.lower(): c for c in df.columns}
    fields = list(table.table_schema.fields)
    names = [f.name for f in fields]
    missing = [n for n in names if n.lower() not in columns and n not in absent]
    if missing:
        raise ValidationError(identifier, f"source lacks this column (source has {_cut(df.columns)})",
                              column=missing[0])
    if row_kind_column and row_kind_column.lower() not in columns:
        raise ValidationError(identifier, "source lacks the row kind column", column=row_kind_column)
    allowed = {n.lower() for n in names} | ({row_kind_column.lower()} if row_kind_column else set())
    extra = [c for c in df.columns if c.lower() not in allowed]
    if extra:
        raise ValidationError(identifier, f"source column is not in the table (table has {_cut(names)})",
                              column=extra[0])

    # SQL text, not Column objects: one py4j call for the projection instead of ≈1,000 (0.2 s per job)
    source_types = {c.name.lower(): c.dataType.simpleString() for c in df.schema.fields}
    exprs = []
    for f in fields:
        if f.name.lower() not in columns:  # absent: never a key (keys never change)
            exprs.append(f"CAST(NULL AS {spark_type(f.type)}) AS {_name(f.name)}")
            continue
        src = _name(columns[f.name.lower()])
        cast = f"try_cast({src} AS {spark_type(f.type)})"
        shown = _shown(f"CAST({src} AS STRING)")
        misfit = (f"WHEN {src} IS NOT NULL AND {cast} IS NULL THEN "
                  + _fail(f.name, shown, f"value does not fit the column type {f.type}"))
        null_key = (f"WHEN {src} IS NULL THEN {_fail(f.name, None, 'primary key column is null')} "
                    if f.name in table.primary_keys else "")
        checks = _exactness_checks(f, src, cast, source_types[f.name.lower()], shown)
        exprs.append(f"CASE {null_key}{misfit}{checks} ELSE {_stored(f, cast)} END AS {_name(f.name)}")
    kind = "CAST(0 AS TINYINT)"
    if row_kind_column:
        op = _name(columns[row_kind_column.lower()])
        known = ", ".join(_text(k) for k in ROW_KINDS)
        by_text = " ".join(f"WHEN {op} = {_text(k)} THEN CAST({code} AS TINYINT)" for k, code in ROW_KINDS.items())
        refused = _refused_retractions(table, identifier, op)
        kind = (f"CASE WHEN {op} IS NULL OR {op} NOT IN ({known}) THEN "
                + _fail(row_kind_column, _shown(f"coalesce({op}, 'null')"),
                        f"row kind must be one of {list(ROW_KINDS)}")
                + f" {refused}{by_text} ELSE CAST(0 AS TINYINT) END")
    return df.selectExpr(*exprs, f"{kind} AS {_name(ROW_KIND)}", f"monotonically_increasing_id() AS {_name(ORDER)}")


def check_distinct_columns(names, identifier: str) -> None:
    """Refuse source columns whose names differ only in case (``ID`` and ``id``): Spark and Paimon match
    names case-insensitively, so either could land in the table's column."""
    seen: dict[str, list[str]] = {}
    for name in names:
        seen.setdefault(name.lower(), []).append(name)
    clashes = [same for same in seen.values() if len(same) > 1]
    if clashes:
        raise ValidationError(identifier, f"source columns {_cut(clashes[0])} clash: column names are matched "
                                          "case-insensitively; rename or drop all but one", column=clashes[0][0])


_INTEGRAL = ("TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT")
_EXACT_SOURCES = ("tinyint", "smallint", "int", "bigint", "boolean")
_DECIMAL = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)")
_SOURCE_DECIMAL = re.compile(r"^decimal\((\d+),(\d+)\)$")
_LENGTH = re.compile(r"^(VAR)?CHAR\((\d+)\)")
_TRUNC_UNIT = {"s": "SECOND", "ms": "MILLISECOND"}


def _exactness_checks(f, src: str, cast: str, source_type: str, shown: str) -> str:
    """WHEN clauses refusing a value the cast would change silently: a fraction into an integer column
    (1.7 into BIGINT), more decimal places than a DECIMAL(p, s) keeps (1.235 into DECIMAL(10, 2), which
    Spark rounds to 1.24), a string longer than VARCHAR(n)/CHAR(n)."""
    declared = str(f.type).replace(" NOT NULL", "").strip().upper()
    if declared in _INTEGRAL and source_type not in _EXACT_SOURCES:
        exact = f"try_cast({src} AS DECIMAL(38, 9))"
        return (f" WHEN {cast} IS NOT NULL AND ({exact} IS NULL OR {exact} != CAST({cast} AS DECIMAL(38, 9))) THEN "
                + _fail(f.name, shown, f"value is not a whole number; refusing to truncate it into {f.type}"))
    decimal = _DECIMAL.match(declared)
    if decimal and source_type not in _EXACT_SOURCES:
        changed = _rounded(src, cast, source_type, int(decimal.group(1)), int(decimal.group(2)))
        if changed:
            return (f" WHEN {cast} IS NOT NULL AND {changed} THEN " + _fail(
                f.name, shown, f"value has more than {decimal.group(2)} decimal places; refusing to round it "
                               f"into {f.type}"))
    length = _LENGTH.match(declared)
    if length:
        n = int(length.group(2))
        return (f" WHEN char_length({cast}) > {n} THEN "
                + _fail(f.name, shown, f"value is longer than the {n} characters of {f.type}"))
    return ""


def _rounded(src: str, cast: str, source_type: str, precision: int, scale: int) -> str:
    """A SQL condition true where casting ``src`` into DECIMAL(precision, scale) changed its value, '' where
    it cannot. A float, double or decimal source is compared with the cast value read back as its own type
    (exact: the double 1.23 is the one nearest 1.23); any other (a string) as a decimal with the column's
    integer digits and every decimal place left of the 38."""
    source_decimal = _SOURCE_DECIMAL.match(source_type)
    if source_decimal and int(source_decimal.group(2)) <= scale:
        return ""  # never more places than the column keeps
    if source_decimal or source_type in ("float", "double"):
        return f"NOT (try_cast({cast} AS {source_type}) <=> {src})"
    wide = f"DECIMAL(38, {38 - (precision - scale)})"
    return f"NOT (try_cast({src} AS {wide}) <=> CAST({cast} AS {wide}))"


def _stored(f, cast: str) -> str:
    """The cast value as Paimon stores it: TIMESTAMP(0..3) files hold seconds or milliseconds, so finer
    values are truncated, as Paimon's own writers do (Java writes TIMESTAMP(3) as epoch milliseconds)."""
    arrow = PyarrowFieldParser.from_paimon_type(f.type)
    if pa.types.is_timestamp(arrow) and arrow.unit in _TRUNC_UNIT:
        back = "timestamp" if arrow.tz else "timestamp_ntz"
        return f"CAST(date_trunc('{_TRUNC_UNIT[arrow.unit]}', {cast}) AS {back})"
    return cast


def _cut(values) -> str:
    text = str(values)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def _shown(value_sql: str) -> str:
    """A value for an error message, cut to SHOWN_CHARS characters."""
    return (f"CASE WHEN char_length({value_sql}) > {SHOWN_CHARS} THEN concat(substring({value_sql}, 1, "
            f"{SHOWN_CHARS}), '...') ELSE {value_sql} END")


def _name(name: str) -> str:
    """A column name quoted for Spark SQL."""
    return "`" + name.replace("`", "``") + "`"


def _text(text: str) -> str:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


_MARK, _END = "airflow-paimon-validation:", ":end-validation"
_FOUND = re.compile(re.escape(_MARK) + r"(\{.*?\})" + re.escape(_END), re.S)


def _fail(column: str, value_sql: str | None, message: str) -> str:
    """A Spark SQL expression failing the task with (column, value, message) for validation_errors()."""
    detail = (f"to_json(named_struct('column', {_text(column)}, 'value', {value_sql or 'CAST(NULL AS STRING)'}, "
              f"'message', {_text(message)}))")
    return f"raise_error(concat({_text(_MARK)}, {detail}, {_text(_END)}))"


@contextmanager
def validation_errors(identifier: str, source: dict | None = None):
    """Turn a failure that is the input's fault into the ValidationError it stands for: validate_and_cast()'s
    checks, source columns that clash (Spark: COLUMN_ALREADY_EXISTS) and, for a parquet ``source``, a file
    Spark cannot read that is corrupt (checked again here: a read that failed for another reason, an object
    store timeout, stays an error that is retried)."""
    try:
        yield
    except ValidationError:
        raise
    except Exception as e:  # Spark wraps raise_error in its own exception types
        text = str(e)
        found = _FOUND.search(text)
        if found:
            detail = json.loads(found.group(1))
            raise ValidationError(identifier, detail["message"], column=detail["column"],
                                  value=detail.get("value")) from None
        from pyspark.errors import PySparkException  # classic and Connect exceptions both

        if isinstance(e, PySparkException) and e.getCondition() == "COLUMN_ALREADY_EXISTS":
            column = (e.getMessageParameters() or {}).get("columnName", "").strip("`")
            raise ValidationError(identifier, "the source has this column twice (names are matched "
                                              "case-insensitively); rename or drop all but one", column=column,
                                  value=(source or {}).get("path")) from None
        unreadable = _UNREADABLE.search(text)
        if unreadable and _is_parquet(source, identifier):
            uri = _local_or_uri(unreadable.group(1))
            problem = _corrupt_parquet(uri)
            if problem:
                raise ValidationError(identifier, f"source file is corrupt or not parquet ({problem})",
                                      value=uri) from None
        raise



# Spark's error for a file a scan (or its schema inference) could not read; the path is URL-encoded
_UNREADABLE = re.compile(r"\[FAILED_READ_FILE\.\w+\] Encountered error while reading file (\S+?)\.(?:\s|$)")


def _is_parquet(source: dict | None, identifier: str) -> bool:
    if not source or not source.get("path"):
        return False
    return (source.get("format") or _format_of(source["path"], identifier)).lower() == "parquet"


def _local_or_uri(spark_path: str) -> str:
    """A path Spark names in an error as storage.py opens it: file: URIs as local paths, URL-decoded."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(spark_path)
    return unquote(parsed.path) if parsed.scheme == "file" else unquote(spark_path)


def _corrupt_parquet(uri: str) -> str | None:
    """Why the parquet file ``uri`` does not decode, or None when it does or cannot be read at all. Its bytes
    are read first and decoded from memory, so an error decoding them is the file's, never the storage's."""
    import pyarrow.parquet as pq

    try:
        data = storage.read_bytes(uri)
    except OSError:
        return None
    try:
        for _ in pq.ParquetFile(pa.BufferReader(data)).iter_batches():
            pass
    except Exception as e:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ... for bad bytes
        return f"{type(e).__name__}: {e}"
    return None


# --- the merge engine's rule for -U/-D rows (engine/merge/merge_engine.py), as a check inside the projection

def _refused_retractions(table: FileStoreTable, identifier: str, op: str) -> str:
    """A CASE branch failing on -U/-D rows where the table's merge engine refuses them as Paimon does
    (after ``ignore-delete`` and its fallback keys drop them), else ''."""
    from airflow_paimon.engine.codec.kinds import RETRACT_TEXTS
    from airflow_paimon.engine.merge.merge_engine import MergeRules

    rules = MergeRules.of(table.table_schema.options, identifier)
    if not rules.refuses_retractions:
        return ""
    retractions = "/".join(RETRACT_TEXTS)
    return (f"WHEN {op} IN ({', '.join(map(_text, RETRACT_TEXTS))}) THEN " + _fail(
        "merge-engine", _text(rules.name), f"merge-engine {rules.name} cannot take {retractions} rows; "
        f"{rules.retraction_advice}") + " ")
