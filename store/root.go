package store

import (
	"errors"
	"fmt"
	"path/filepath"
)

// DefaultRoot resolves the directory that holds runs (docs/storage.md,
// "Where runs live"):
// $STRATUM_STATE_ROOT when set, else $STRATUM_HOME/flows, else
// $HOME/.stratum/flows. getenv is os.Getenv in production; tests pass their
// own. The result is absolute (a relative setting is resolved against the
// working directory, once, here), so a server started elsewhere still finds
// the same runs.
func DefaultRoot(getenv func(string) string) (string, error) {
	var root string
	switch {
	case getenv("STRATUM_STATE_ROOT") != "":
		root = getenv("STRATUM_STATE_ROOT")
	case getenv("STRATUM_HOME") != "":
		root = filepath.Join(getenv("STRATUM_HOME"), "flows")
	case getenv("HOME") != "":
		root = filepath.Join(getenv("HOME"), ".stratum", "flows")
	case getenv("USERPROFILE") != "":
		root = filepath.Join(getenv("USERPROFILE"), ".stratum", "flows")
	default:
		return "", errors.New("state root: none of STRATUM_STATE_ROOT, STRATUM_HOME, HOME is set")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("state root %s: %w", root, err)
	}
	return abs, nil
}
