package main

import (
	"os"

	"mediagen/internal/catalog"
)

// Reload on a change of the catalog file (--catalog-watch). Kubernetes mounts a ConfigMap as
// a symlink, catalog.yaml → ..data/catalog.yaml, and updates it by writing a new directory and
// renaming a new ..data link over the old one: the file a watch on its inode had is deleted,
// never written. So the watch does not hold the file: at every --catalog-poll tick it stats
// the path (following the links, so the swap shows as another inode) and reads it only when
// the stat changed, then reloads only when the content's hash differs from the catalog in
// force. A copy over the file in place, an editor's rename and the kubelet's swap are all seen;
// a touch is not a reload.

// catalogFileState is what the watch last saw of the file. Only the watch goroutine uses it.
type catalogFileState struct {
	info os.FileInfo // the last stat; nil before the first tick
	hash string      // the hash of the content last seen, in force or refused
}

// catalogFileChanged says whether the file now holds content that is neither in force nor
// already refused. An unreadable file counts as changed once (the reload logs why and keeps
// the catalog in force), and again only when its stat changes.
func (m *Main) catalogFileChanged() bool {
	path := m.Config.Catalog
	st := &m.reload.file
	fi, err := os.Stat(path)
	if err != nil {
		st.info = nil // gone for now (a swap in progress): read it again when it is back
		return false
	}
	if st.info != nil && os.SameFile(fi, st.info) && fi.Size() == st.info.Size() && fi.ModTime().Equal(st.info.ModTime()) {
		return false
	}
	st.info = fi
	data, err := catalog.ReadFile(path)
	if err != nil {
		return true // refused by the reload, with the reason in the log
	}
	h := catalog.Hash(data)
	if h == st.hash {
		return false
	}
	st.hash = h
	return h != m.catalogs.Loaded().Hash
}
