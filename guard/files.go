package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stratum-go/stratum/guard/internal/ledger"
	"github.com/stratum-go/stratum/internal/atomicfile"
)

// Modes of the store (docs/guard.md, "Storage"): a resource directory and
// everything in it belong to the user who runs Stratum alone, so that no
// other local user can read a ledger or open the lock file to hold it.
const (
	dirMode  os.FileMode = 0o700
	fileMode os.FileMode = ledger.FileMode
)

// writeOp names a durable write of the guard, for the fault-injection seam.
type writeOp string

const (
	opRegistry writeOp = "registry"
	opLedger   writeOp = "ledger"
	opMarker   writeOp = "marker"
)

// writeFile atomically replaces path (mode 0600). Every durable write of
// the guard goes through writeFile or appendLine, the guard's file
// boundary: a test can make a chosen write fail there (Guard.fault).
func (g *Guard) writeFile(op writeOp, path string, data []byte) error {
	if g.fault != nil {
		if err := g.fault(op, path); err != nil {
			return err
		}
	}
	return atomicfile.WriteFile(path, data, fileMode)
}

// appendLine appends one fsynced line (creating the file 0600).
func (g *Guard) appendLine(op writeOp, path string, line []byte) error {
	if g.fault != nil {
		if err := g.fault(op, path); err != nil {
			return err
		}
	}
	return atomicfile.AppendLine(path, line, fileMode)
}

// resourceFiles are the files of a resource directory whose modes are
// kept tight (ledger.torn-* are matched by prefix).
var resourceFiles = []string{registryFile, ledgerFile, markerFile, lockFile}

func isResourceFile(name string) bool {
	return slices.Contains(resourceFiles, name) || strings.HasPrefix(name, "ledger.torn-")
}

// tightenDir makes an existing resource directory 0700 (stores written
// before this rule were 0755). It runs before the lock is taken, so that
// from then on no other user can open the lock file; a failure (say, the
// directory belongs to someone else) is left for looseModes to report.
func tightenDir(dir string) {
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && fi.Mode().Perm()&^dirMode != 0 {
		_ = os.Chmod(dir, dirMode)
	}
}

// tightenFiles makes the resource's files 0600, under the lock, at the
// start of every mutation.
func tightenFiles(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isResourceFile(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().Perm()&^fileMode != 0 {
			_ = os.Chmod(filepath.Join(dir, e.Name()), fileMode)
		}
	}
}

// looseModes lists the resource's directory and files that other users
// may read or write, for `stratum guard verify`.
func looseModes(dir string) []string {
	var out []string
	if fi, err := os.Lstat(dir); err == nil && fi.Mode().Perm()&^dirMode != 0 {
		out = append(out, fmt.Sprintf("the resource directory is mode %04o, open to other users (the next mutation makes it %04o)", fi.Mode().Perm(), dirMode))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !isResourceFile(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().Perm()&^fileMode != 0 {
			out = append(out, fmt.Sprintf("%s is mode %04o, open to other users (the next mutation makes it %04o)", e.Name(), fi.Mode().Perm(), fileMode))
		}
	}
	return out
}

// mkdirPrivate creates dir and any missing parent 0700, syncing each
// parent whose entries changed, so that an acknowledged registration
// survives a crash. An existing directory is tightened instead.
func mkdirPrivate(dir string) error {
	var created []string
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil || filepath.Dir(p) == p {
			break
		}
		created = append(created, p)
	}
	if len(created) == 0 {
		tightenDir(dir)
		return nil
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return err
	}
	for _, p := range created {
		// MkdirAll applies the umask; the mode is the point here.
		if err := os.Chmod(p, dirMode); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := atomicfile.SyncDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}
