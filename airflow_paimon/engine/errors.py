"""Errors the engine raises on purpose; each names the table and, where there is one, the column and value."""


class PaimonJobError(Exception):
    """A write cannot go on; nothing has been staged or committed."""


class ValidationError(PaimonJobError):
    """The input or the declared schema does not fit the table."""

    def __init__(self, table: str, message: str, column: str | None = None, value=None):
        self.table, self.column, self.value = table, column, value
        where = f"table {table}"
        if column is not None:
            where += f", column {column!r}"
        if value is not None or column is not None:
            where += f", value {value!r}"
        super().__init__(f"{where}: {message}")


class StaleIndexError(PaimonJobError):
    """The table moved after the index was bootstrapped, so the staged assignment may be wrong."""
