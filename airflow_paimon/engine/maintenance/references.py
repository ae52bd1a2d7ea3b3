"""What snapshots reference: data (and changelog) files, manifests, manifest lists, index files.

Data files a range of snapshots needs = the live files of the first one plus every file the later ones'
deltas add; one full scan and a few small deltas instead of a scan per snapshot.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pypaimon.manifest.index_manifest_file import IndexManifestFile
from pypaimon.manifest.manifest_file_manager import ManifestFileManager
from pypaimon.manifest.manifest_list_manager import ManifestListManager

from airflow_paimon.engine.codec.kinds import FileKind
from airflow_paimon.engine.files.scan import file_path, live_entries

if TYPE_CHECKING:
    from pypaimon.table.file_store_table import FileStoreTable


def normalize(path: str) -> str:
    """A path without its scheme, as pyarrow's file systems list it: "s3://b/k" -> "b/k"; a local file as an
    absolute path however it is spelled ("/x", Hadoop's "file:/x" as pypaimon names data files, "file:///x")."""
    if path.startswith("file:"):
        return "/" + path[len("file:"):].strip("/")
    return re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://", "", path).rstrip("/")


@dataclass
class References:
    data: set = field(default_factory=set)  # data and changelog file paths
    metadata: set = field(default_factory=set)  # manifest, manifest-list, index-manifest and index file paths

    def __or__(self, other: "References") -> "References":
        return References(self.data | other.data, self.metadata | other.metadata)

    def __contains__(self, path: str) -> bool:
        return path in self.data or path in self.metadata


class SnapshotReader:
    """Reads snapshot metadata once per file (manifests are shared by many snapshots)."""

    def __init__(self, table: FileStoreTable):
        self.table = table
        self.lists, self.manifests = ManifestListManager(table), ManifestFileManager(table)
        self.paths = table.path_factory()
        self._entries: dict[str, list] = {}

    def entries(self, manifest_name: str) -> list:
        if manifest_name not in self._entries:
            self._entries[manifest_name] = self.manifests.read(manifest_name, drop_stats=True)
        return self._entries[manifest_name]

    def delta_entries(self, snapshot) -> list:
        return [e for m in self.lists.read_delta(snapshot) for e in self.entries(m.file_name)]

    def changelog_entries(self, snapshot) -> list:
        if not snapshot.changelog_manifest_list:
            return []
        return [e for m in self.lists.read_changelog(snapshot) for e in self.entries(m.file_name)]

    def data_paths(self, entry) -> set[str]:
        """The data file and its extra files (they live next to it)."""
        path = normalize(file_path(self.table, entry))
        folder = path.rsplit("/", 1)[0]
        return {path, *(f"{folder}/{x}" for x in entry.file.extra_files or [])}

    def tagged(self) -> list:
        """The snapshots tags pin (their files must outlive expiry)."""
        tags = self.table.tag_manager()
        return [tags.get(name) for name in tags.list_tags() if tags.get(name) is not None]

    def metadata_files(self, snapshot) -> set[str]:
        """Manifest lists, their manifests, the index manifest and its index files of one snapshot."""
        manifest_dir, index_dir = self.paths.manifest_path(), self.paths.index_path()
        names = {snapshot.base_manifest_list, snapshot.delta_manifest_list}
        metas = self.lists.read_base(snapshot) + self.lists.read_delta(snapshot)
        if snapshot.changelog_manifest_list:
            names.add(snapshot.changelog_manifest_list)
            metas += self.lists.read_changelog(snapshot)
        files = {normalize(f"{manifest_dir}/{n}") for n in names}
        files |= {normalize(f"{manifest_dir}/{m.file_name}") for m in metas}
        if snapshot.index_manifest:
            files.add(normalize(f"{manifest_dir}/{snapshot.index_manifest}"))
            for e in IndexManifestFile(self.table).read(snapshot.index_manifest):
                files.add(normalize(f"{index_dir}/{e.index_file.file_name}"))
        return files

    def needed_by(self, snapshots: list) -> References:
        """Every file any of ``snapshots`` (ascending ids, consecutive) needs to be read."""
        refs = References()
        if not snapshots:
            return refs
        refs.data = {p for e in live_entries(self.table, snapshots[0]) for p in self.data_paths(e)}
        for snap in snapshots:
            added = [e for e in self.delta_entries(snap) if e.kind == FileKind.ADD] if snap is not snapshots[0] else []
            refs.data |= {p for e in added + self.changelog_entries(snap) for p in self.data_paths(e)}
            refs.metadata |= self.metadata_files(snap)
        return refs

    def needed_by_tags(self) -> References:
        refs = References()
        for tag in self.tagged():
            refs = refs | self.needed_by([tag])
        return refs
