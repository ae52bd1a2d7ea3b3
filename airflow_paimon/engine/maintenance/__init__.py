"""Table maintenance: snapshot expiry and orphan-file removal (Paimon's ExpireSnapshotsImpl and
OrphanFilesClean), driver-side on pypaimon's metadata readers."""
