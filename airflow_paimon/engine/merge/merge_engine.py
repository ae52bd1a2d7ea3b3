"""The table's merge engine and the options that change how it treats records: one typed object, read once
from the table's parsed options (engine/options/: keys, defaults and fallback keys as in Paimon), asked by every
step that merges — the assigner (what a known key does), the in-batch merge and the write task (which
retractions are dropped, refused or taken), the source checks and compaction.

- ``ignore-delete`` (fallback keys ``first-row.ignore-delete``, ``deduplicate.ignore-delete``,
  ``partial-update.ignore-delete``; the first key present wins) is Paimon's RowKindFilter: every -U/-D is
  dropped before any merge, whatever the engine.
- Retractions that pass: deduplicate deletes the key; partial-update takes a -D as a reset and ignores -U with
  ``partial-update.remove-record-on-delete``, else refuses them; first-row refuses them; aggregation hands them
  to its field aggregators (they never delete the key).
- A key the global index holds in another partition: Paimon's ``ExistingProcessor`` of the engine.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pyarrow as pa
from pypaimon.common.options.core_options import MergeEngine

from airflow_paimon.engine.codec.kinds import is_retract
from airflow_paimon.engine.errors import ValidationError
from airflow_paimon.engine.options import MergeOptions, TableOptions

__all__ = ["MergeEngine", "ExistingProcessor", "MergeRules"]


class ExistingProcessor(Enum):
    """What a record does to a key the global index holds in another partition (Paimon's
    ``crosspartition.ExistingProcessor.create``)."""
    DELETE_EXISTING = "delete-existing"  # deduplicate: a DELETE in the old place, the key moves to the new one
    USE_OLD = "use-old"                  # partial-update, aggregation: the record merges in the old place
    SKIP_NEW = "skip-new"                # first-row: the first row stays, the new record is dropped

    @classmethod
    def of(cls, engine: MergeEngine) -> "ExistingProcessor":
        return {MergeEngine.DEDUPLICATE: cls.DELETE_EXISTING, MergeEngine.PARTIAL_UPDATE: cls.USE_OLD,
                MergeEngine.AGGREGATE: cls.USE_OLD, MergeEngine.FIRST_ROW: cls.SKIP_NEW}[engine]

    def process_exists(self, same_partition: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For known keys (``same_partition``: the record's partition is the stored one): (the key moves to the
        record's partition, the key takes the record). Keys that take it without moving go to their old place.
        SKIP_NEW drops same-partition records too: Paimon sends them to the old bucket, where first-row's merge
        keeps the older row anyway."""
        n = len(same_partition)
        if self is ExistingProcessor.DELETE_EXISTING:
            return ~same_partition, np.ones(n, dtype=bool)
        return np.zeros(n, dtype=bool), np.full(n, self is ExistingProcessor.USE_OLD, dtype=bool)


@dataclass(frozen=True)
class MergeRules(MergeOptions):
    """How the table's merge engine treats records: its merge options (``TableOptions.merge``) and what follows
    from them; build it with ``MergeRules.of(options)``."""

    @classmethod
    def of(cls, options: TableOptions | Mapping, identifier: str = "?") -> "MergeRules":
        """The rules of a table with ``options`` (its TableOptions, or its options as given, parsed for
        ``identifier``); an unknown engine or a malformed value fails naming both."""
        parsed = options if isinstance(options, TableOptions) else TableOptions.parse(identifier, dict(options))
        try:
            merge = parsed.merge
        except ValidationError as e:  # worded as the merge steps word it: "<option> '<value>' is not supported"
            problem = str(e).split(": ", 1)[1]
            if not problem.startswith("is not supported"):
                problem = f"is not supported: {problem}"
            raise ValidationError(parsed.identifier, f"{e.option} {e.value!r} {problem}") from None
        return cls(**vars(merge))

    @property
    def changelog(self) -> bool:
        """A ``changelog-producer`` other than none."""
        return self.changelog_producer != "none"

    @property
    def name(self) -> str:
        """The engine as the ``merge-engine`` option spells it."""
        return self.engine.value

    @property
    def existing(self) -> ExistingProcessor:
        return ExistingProcessor.of(self.engine)

    @property
    def ordered_by_clock(self) -> bool:
        """Whether runs' rows land in the order of their as-of instants, whatever their commit order
        (engine/commit/ordering.py): a deduplicate table without its own ``sequence.field``."""
        return self.engine is MergeEngine.DEDUPLICATE and not self.sequence_fields

    @property
    def keeps_tombstones(self) -> bool:
        """Whether a delete of a key the table does not have is written all the same (a tombstone), so that a
        run committed later but as of an earlier instant does not bring the key back: in tables ordered by the
        runs' clock, without a changelog producer (whose changelog, as Paimon's, has no delete of a key the table
        never had)."""
        return self.ordered_by_clock and not self.changelog

    @property
    def aggregates(self) -> bool:
        """Aggregation: every record is written and Paimon's merge applies the aggregate functions (a batch is
        not merged here, and a retraction is an input to the aggregate, not a delete of the key)."""
        return self.engine is MergeEngine.AGGREGATE

    @property
    def refuses_retractions(self) -> bool:
        """Whether a -U/-D that passes the row-kind filter is an error, as in Paimon's merge function."""
        if self.ignore_delete:
            return False
        return self.engine is MergeEngine.FIRST_ROW or (self.engine is MergeEngine.PARTIAL_UPDATE
                                                        and not self.remove_record_on_delete)

    def filter_row_kinds(self, rows: pa.Table, kinds: np.ndarray) -> tuple[pa.Table, np.ndarray]:
        """Paimon's RowKindFilter: (the rows that reach the merge, their kinds)."""
        kinds = np.asarray(kinds, dtype=np.int8)
        if not self.ignore_delete:
            return rows, kinds
        kept = ~is_retract(kinds)
        return (rows, kinds) if kept.all() else (rows.filter(pa.array(kept)), kinds[kept])

    def check_retractions(self, kinds: np.ndarray, identifier: str) -> None:
        """Refuse the retractions among ``kinds`` (after the row-kind filter) that the engine cannot take."""
        if not self.refuses_retractions:
            return
        kinds = np.asarray(kinds)
        count = int(is_retract(kinds).sum())
        if count:
            raise ValidationError(identifier, f"merge-engine {self.name} cannot accept -U/-D records ({count} in "
                                              f"this batch); {self.retraction_advice}")

    @property
    def retraction_advice(self) -> str:
        if self.engine is MergeEngine.PARTIAL_UPDATE:
            return ("set 'partial-update.remove-record-on-delete' = 'true' (a -D removes the row) or "
                    "'ignore-delete' = 'true' to drop them")
        return "set 'ignore-delete' = 'true' to drop them"
