package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// tempPrefix marks temp files so that Sweep can remove leftovers of a crash.
const tempMarker = ".tmp-"

// WriteFile atomically replaces path with data (mode perm) and makes the
// replacement durable before returning: the data is fsynced before the
// rename and the directory after it.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+tempMarker+"*")
	if err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("atomic write %s: fsync: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("atomic write %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that entries created, renamed or removed in
// it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// AppendLine appends line (which must not contain a newline) plus a
// newline to the file at path with a single write, then fsyncs it. The file
// is created with perm if missing; a newly created file also gets its
// directory entry synced.
func AppendLine(path string, line []byte, perm os.FileMode) error {
	if strings.ContainsRune(string(line), '\n') {
		return fmt.Errorf("append %s: line contains a newline", path)
	}
	_, statErr := os.Lstat(path)
	created := os.IsNotExist(statErr)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
	if err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("append %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("append %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append %s: %w", path, err)
	}
	if created {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// Sweep removes temp files that [WriteFile] left in dir when a process died
// between creating and renaming them. It returns how many it removed.
func Sweep(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("sweep %s: %w", dir, err)
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") && strings.Contains(name, tempMarker) && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
				return n, fmt.Errorf("sweep %s: %w", dir, err)
			}
			n++
		}
	}
	return n, nil
}
