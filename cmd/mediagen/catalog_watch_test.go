package main

import (
	"os"
	"path/filepath"
	"testing"
)

// configMapDir lays out a catalog as the kubelet mounts a ConfigMap key: dir/catalog.yaml →
// ..data/catalog.yaml, ..data → a timestamped directory holding the content.
type configMapDir struct {
	t   *testing.T
	dir string
	gen int
	cur string
}

func newConfigMapDir(t *testing.T, content string) (*configMapDir, string) {
	t.Helper()
	c := &configMapDir{t: t, dir: t.TempDir()}
	c.update(content)
	if err := os.Symlink(filepath.Join("..data", "catalog.yaml"), filepath.Join(c.dir, "catalog.yaml")); err != nil {
		t.Fatal(err)
	}
	return c, filepath.Join(c.dir, "catalog.yaml")
}

// update is the kubelet's atomic swap: a new directory, a new ..data link renamed over the old
// one, the old directory removed.
func (c *configMapDir) update(content string) string {
	c.t.Helper()
	c.gen++
	ts := filepath.Join(c.dir, "..2026_11_29_10_00_0"+string(rune('0'+c.gen)))
	if err := os.Mkdir(ts, 0o755); err != nil {
		c.t.Fatal(err)
	}
	h := writeFile(c.t, filepath.Join(ts, "catalog.yaml"), content)
	tmp := filepath.Join(c.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, "..data")); err != nil {
		c.t.Fatal(err)
	}
	if c.cur != "" {
		if err := os.RemoveAll(c.cur); err != nil {
			c.t.Fatal(err)
		}
	}
	c.cur = ts
	return h
}

// With --catalog-watch, a catalog mounted from a ConfigMap is reloaded when the kubelet swaps
// in new content, a bad one is refused once and the old stays, and a good one after it is taken.
func TestCatalogWatchReloadsAConfigMapSwap(t *testing.T) {
	t.Parallel()
	cm, path := newConfigMapDir(t, reloadCatalog("up-fast", "2"))
	dir := t.TempDir()
	m := startReloadMain(t, nil, filepath.Join(dir, "data"), path, "--role", "api", "--catalog-poll", "20ms", "--catalog-watch")
	first := m.CatalogVersion().Hash

	next := cm.update(reloadCatalog("up-fast", "3"))
	waitFor(t, "the swapped catalog in force", func() bool { return m.CatalogVersion().Hash == next })
	if next == first {
		t.Fatal("the two catalogs hash alike")
	}
	tenant, _ := m.cat().Tenant("acme")
	if r, _ := tenant.Rates.NativeRate("acme-video"); r != 3_000_000 {
		t.Errorf("rate after the swap: %d micro-units, want 3000000", r)
	}

	cm.update(reloadCatalog("up-fast", "-1"))
	waitFor(t, "the bad catalog refused", func() bool {
		return metricValue(t, m, "mediagen_catalog_reloads_total", `outcome="refused",trigger="file"`) == "1"
	})
	if got := m.CatalogVersion().Hash; got != next {
		t.Errorf("in force after a refused swap: %s, want %s", got, next)
	}

	last := cm.update(reloadCatalog("up-fast", "4"))
	waitFor(t, "the good catalog after the bad one", func() bool { return m.CatalogVersion().Hash == last })
	if v := metricValue(t, m, "mediagen_catalog_reloads_total", `outcome="ok",trigger="file"`); v != "2" {
		t.Errorf("reloads by file: %q, want 2", v)
	}
	if v := metricValue(t, m, "mediagen_catalog_reloads_total", `outcome="refused",trigger="file"`); v != "1" {
		t.Errorf("refused reloads by file: %q, want 1 (a bad file is tried once)", v)
	}
}
