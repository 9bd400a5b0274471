//go:build !unix

package expr

import (
	"io/fs"
	"os"
)

// openNoFollow refuses a final symlink by checking it before opening:
// platforms without O_NOFOLLOW leave a small window between the two.
func openNoFollow(path string) (*os.File, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return nil, errSymlink
	}
	return os.Open(path)
}

var errSymlink = &fs.PathError{Op: "open", Err: fs.ErrInvalid}

func isSymlinkLoop(err error) bool { return err == errSymlink }
