"""Which runs of a bucket to compact and at which level: Paimon's UniversalCompaction and full compaction.

Runs come newest first (see levels.level_sorted_runs); a pick is always a prefix of them, so everything
left out sits on a higher level than the output and the LSM order holds.
"""
from __future__ import annotations

from dataclasses import dataclass

from airflow_paimon.engine.compact.levels import LevelSortedRun
from airflow_paimon.engine.options import CompactOptions


@dataclass(frozen=True)
class CompactUnit:
    output_level: int
    runs: tuple[LevelSortedRun, ...]

    @property
    def files(self) -> list:
        return [f for r in self.runs for f in r.files]


def pick_full_compaction(num_levels: int, runs: list[LevelSortedRun]) -> CompactUnit | None:
    """Everything to the max level, unless the bucket already is one run there."""
    max_level = num_levels - 1
    if not runs or (len(runs) == 1 and runs[0].level == max_level):
        return None
    return CompactUnit(max_level, tuple(runs))


class UniversalCompaction:
    """RocksDB-style universal compaction as Paimon runs it: size amplification, then size ratio, then
    run count."""

    def __init__(self, options: CompactOptions):
        self.max_size_amp = options.max_size_amplification_percent
        self.size_ratio = options.size_ratio
        self.trigger = options.num_sorted_run_compaction_trigger

    def pick(self, num_levels: int, runs: list[LevelSortedRun]) -> CompactUnit | None:
        max_level = num_levels - 1
        unit = self.pick_for_size_amp(max_level, runs)
        if unit is None:
            unit = self.pick_for_size_ratio(max_level, runs)
        if unit is None and len(runs) > self.trigger:
            unit = self._pick_for_size_ratio(max_level, runs, len(runs) - self.trigger + 1)
        return unit

    def pick_for_size_amp(self, max_level: int, runs: list[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) < self.trigger:
            return None
        candidate_size = sum(r.total_size for r in runs[:-1])
        earliest_size = runs[-1].total_size
        # size amplification = extra bytes over the oldest run, in percent
        if candidate_size * 100 > self.max_size_amp * earliest_size:
            return CompactUnit(max_level, tuple(runs))
        return None

    def pick_for_size_ratio(self, max_level: int, runs: list[LevelSortedRun]) -> CompactUnit | None:
        if len(runs) < self.trigger:
            return None
        return self._pick_for_size_ratio(max_level, runs, 1)

    def _pick_for_size_ratio(self, max_level: int, runs: list[LevelSortedRun], count: int,
                             force: bool = False) -> CompactUnit | None:
        size = sum(r.total_size for r in runs[:count])
        triggered = force or count > 1
        for run in runs[count:]:
            if size * (100.0 + self.size_ratio) / 100.0 < run.total_size:
                # once triggered, small runs of levels 0 and 1 still join (Paimon does the same)
                if not triggered or run.level > 1:
                    break
            size += run.total_size
            count += 1
            triggered = True
        return create_unit(runs, max_level, count) if triggered else None


def create_unit(runs: list[LevelSortedRun], max_level: int, count: int) -> CompactUnit:
    """The first ``count`` runs, written one level above the next run left out (never to level 0)."""
    output = max_level if count == len(runs) else max(0, runs[count].level - 1)
    if output == 0:
        for run in runs[count:]:
            count += 1
            if run.level != 0:
                output = run.level
                break
    if count == len(runs):
        output = max_level
    return CompactUnit(output, tuple(runs[:count]))
