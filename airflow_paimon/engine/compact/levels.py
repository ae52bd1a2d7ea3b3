"""The LSM shape of one bucket, as Paimon's Levels sees it: level-0 files are one sorted run each (newest
first), every higher non-empty level is one sorted run; IntervalPartition groups overlapping files."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LevelSortedRun:
    level: int
    files: tuple  # DataFileMeta, sorted by min key

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


def _level0_order(f):
    # Paimon's Levels: larger max sequence number first; ties by min sequence, creation time, file name.
    created = f.creation_time_epoch_millis() or 0
    return (-f.max_sequence_number, f.min_sequence_number, created, f.file_name)


def key_of(row) -> tuple:
    return tuple(row.values)


def level_sorted_runs(files) -> list[LevelSortedRun]:
    """Runs newest first: each level-0 file alone, then levels 1..n as one run per non-empty level."""
    runs = [LevelSortedRun(0, (f,)) for f in sorted((f for f in files if f.level == 0), key=_level0_order)]
    for level in sorted({f.level for f in files if f.level > 0}):
        same = sorted((f for f in files if f.level == level), key=lambda f: key_of(f.min_key))
        runs.append(LevelSortedRun(level, tuple(same)))
    return runs


def number_of_levels(configured: int, files) -> int:
    """Configured levels, widened when a writer already put files above them (Paimon restores it the same way)."""
    return max(configured, max((f.level for f in files), default=-1) + 1)


def non_empty_highest_level(files) -> int:
    return max((f.level for f in files), default=-1)


def interval_partition(files) -> list[list]:
    """Sections of transitively key-overlapping files, in key order (Paimon's IntervalPartition).

    A section of one file overlaps nothing and may be re-levelled instead of rewritten."""
    ordered = sorted(files, key=lambda f: (key_of(f.min_key), key_of(f.max_key)))
    sections: list[list] = []
    bound: tuple = ()
    for f in ordered:
        if sections and key_of(f.min_key) <= bound:
            sections[-1].append(f)
            bound = max(bound, key_of(f.max_key))
        else:
            sections.append([f])
            bound = key_of(f.max_key)
    return sections
