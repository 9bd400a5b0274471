package guard

import (
	"os"
	"path/filepath"
	"strings"
)

// AllowRootHint says how a person allows another workspace root: the flag
// of the command that starts Stratum (docs/guard.md, "The workspace
// jail").
const AllowRootHint = "pass --allow-root DIR to the command that starts Stratum"

// realPath is p with its symlinks resolved, or its cleaned absolute form
// when that fails (a root that does not exist allows nothing anyway).
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// inside reports whether p is base or below it (both real paths).
func inside(base, p string) bool {
	if p == base {
		return true
	}
	rel, err := filepath.Rel(base, p)
	return err == nil && filepath.IsLocal(rel)
}

// checkWorkspaceRoot is the jail of file, git and command evidence: the
// workspace root must be an absolute path to an existing directory whose
// real path lies inside one of the allowed roots. The person who starts
// Stratum chooses the allowed roots (Options.AllowedRoots); a caller
// that registers a resource cannot move them. what names the root in
// messages ("workspace_root" at registration, "the registered
// workspace_root" at a transition).
func (g *Guard) checkWorkspaceRoot(what, root string) error {
	if !filepath.IsAbs(root) {
		return errorf(CodeInvalidWorkspaceRoot, "%s %q is not an absolute path", what, root)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return errorf(CodeInvalidWorkspaceRoot, "%s %q is not an existing directory", what, root)
	}
	real := realPath(root)
	for _, allowed := range g.allowedRoots {
		if inside(realPath(allowed), real) {
			return nil
		}
	}
	roots := "none"
	if len(g.allowedRoots) > 0 {
		roots = strings.Join(g.allowedRoots, ", ")
	}
	resolved := ""
	if real != filepath.Clean(root) {
		resolved = " (it resolves to " + real + ")"
	}
	return errorf(CodeInvalidWorkspaceRoot, "%s %q%s is outside the allowed roots (%s); to allow another, %s", what, root, resolved, roots, AllowRootHint)
}
