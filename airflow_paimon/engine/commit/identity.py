"""The commit identity of one DAG run's write: derived, never random, so a retry finds its own commit."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class CommitIdentity:
    commit_user: str
    commit_identifier: int

    @classmethod
    def for_run(cls, dag_id: str, run_id: str, table: str) -> "CommitIdentity":
        digest = hashlib.sha256("\0".join((dag_id, run_id, table)).encode()).digest()
        # Paimon's commit identifier is a Java long; Long.MAX_VALUE is reserved for batch commits.
        identifier = int.from_bytes(digest[:8], "big") & 0x3FFF_FFFF_FFFF_FFFF
        return cls(f"airflow-paimon-{digest[8:24].hex()}", identifier)
