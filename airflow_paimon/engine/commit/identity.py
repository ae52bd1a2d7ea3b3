"""The commit identity of one DAG run's write: derived, never random, so a retry finds its own commit.

A run cleared after it finished (Airflow's Clear, counted by ``DagRun.clear_number``) is a new *generation* of
the run: it gets an identity of its own, so its write is not mistaken for the earlier generation's commit.
Generation 0 is the identity of a run never cleared, the same as before generations existed (tables and
staging written then keep working)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class CommitIdentity:
    commit_user: str
    commit_identifier: int

    @classmethod
    def for_run(cls, dag_id: str, run_id: str, table: str, generation: int = 0) -> "CommitIdentity":
        parts = (dag_id, run_id, table) + ((f"clear {generation}",) if generation else ())
        digest = hashlib.sha256("\0".join(parts).encode()).digest()
        # Paimon's commit identifier is a Java long; Long.MAX_VALUE is reserved for batch commits.
        identifier = int.from_bytes(digest[:8], "big") & 0x3FFF_FFFF_FFFF_FFFF
        return cls(f"airflow-paimon-{digest[8:24].hex()}", identifier)

    @classmethod
    def generations(cls, dag_id: str, run_id: str, table: str, upto: int) -> dict["CommitIdentity", int]:
        """The identities of generations 0..``upto`` of a run, each mapped to its generation."""
        return {cls.for_run(dag_id, run_id, table, g): g for g in range(max(upto, 0) + 1)}

