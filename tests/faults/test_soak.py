"""Soak: 50 random batches (inserts, in-place updates, partition moves, deletes, in-batch duplicate keys)
through bootstrap-index -> assign-and-write -> commit on a cross-partition table, with a compaction every
10th run as the example DAG can be set to; after every batch pypaimon and pypaimon-rust read exactly the
pandas oracle, no key twice; the index equals a full rebuild every 10th batch and at the end."""
from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
import pytest

from airflow_paimon.engine.table.table import get_table
from compaction_tables import assert_reads
from faults.batches import ROW_KIND, random_batch
from faults.harness import JOBS, assert_index_consistent, fault_pipeline
from oracle import expected_upsert

pytestmark = [pytest.mark.faults, pytest.mark.spark]
SEED, BATCHES, ROWS, COMPACT_EVERY = 20261123, 50, 80, 10
log = logging.getLogger(__name__)


def test_soak_random_batches_match_the_oracle(spark, tmp_path):
    rng, p = np.random.default_rng(SEED), fault_pipeline(spark, str(tmp_path / "warehouse"), full_compaction=False)
    batches, expected, next_id = [], pd.DataFrame(columns=["id", "dt", "v"]), 0
    started, rows_in, rows_compared, compacted, moves = time.monotonic(), 0, 0, 0, 0
    for i in range(BATCHES):
        batch, next_id = random_batch(rng, expected, next_id, ROWS)
        source = tmp_path / f"batch-{i}.parquet"
        batch.to_parquet(source, index=False)
        batches.append(batch)
        jobs = JOBS if (i + 1) % COMPACT_EVERY == 0 else JOBS[:3]
        done = p.dag_run(str(source), f"run-{i}", jobs=jobs)
        expected = expected_upsert(batches, "id", row_kind=ROW_KIND)
        table = get_table(p.options, p.table)
        assert_reads(table, p.warehouse, expected, ["id"])  # raises on the first mismatch or duplicate key
        rows_in, rows_compared, moves = rows_in + len(batch), rows_compared + 2 * len(expected), \
            moves + done["assign_and_write"]["moved_keys"]
        if "compact" in done:
            assert done["compact"]["snapshot_id"] == done["commit"]["snapshot_id"] + (done["compact"][
                "compacted_buckets"] > 0)
            compacted += done["compact"]["compacted_buckets"]
            assert assert_index_consistent(p, tmp_path / f"index-{i}") == len(expected)
    assert compacted > 0 and moves > 0 and len(expected) > 0
    log.warning("soak: %s batches, %s rows in (%s keys moved), %s rows compared, 0 mismatches, %s buckets "
                "compacted, %.0f s", BATCHES, rows_in, moves, rows_compared, compacted, time.monotonic() - started)
