"""Table maintenance, driver-side on pypaimon's metadata readers: snapshot expiry and orphan-file removal (Paimon's
ExpireSnapshotsImpl and OrphanFilesClean), partition expiry (PartitionExpire) and rollback to a snapshot or tag
(RollbackHelper)."""
