// Package testkit holds the helpers the package tests share: one settable clock, bounded
// waits on conditions instead of sleeps, a fresh SQLite store, a key with credit, a
// safefetch client that never leaves loopback, and a free loopback address for a process to
// listen on. Only tests import it; it is not part of the binary. A package that
// store/sqlite, safefetch or billing import cannot use it from its
// internal tests (that would be an import cycle).
package testkit
