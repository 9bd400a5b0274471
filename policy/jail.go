package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideRoots is wrapped by every workspace root the policy refuses.
var ErrOutsideRoots = errors.New("workspace root not allowed")

// RootError is a refused workspace root.
type RootError struct {
	Root string
	// Problem is what is wrong with it.
	Problem string
	// Allowed are the roots it had to lie inside, and where they come
	// from.
	Allowed []string
	Note    string
	// Fix says how the person allows another root.
	Fix string
}

func (e *RootError) Error() string {
	allowed := strings.Join(e.Allowed, ", ")
	if allowed == "" {
		allowed = "none"
	}
	return fmt.Sprintf("%q %s; a workspace root must be a directory inside the allowed roots (%s; from %s); to allow another, %s",
		e.Root, e.Problem, allowed, e.Note, e.Fix)
}

func (e *RootError) Unwrap() error { return ErrOutsideRoots }

// Workspace implements engine.Policy: root (absolute and clean) must be
// an existing directory inside an allowed root — one the person named
// (or the working directory), or one the MCP client declared when
// client_roots is on — reached without a symbolic link below that root.
// A link below the allowed root could be pointed elsewhere after the
// check, so it is refused; the person's own roots may be reached through
// links (docs/policy.md, "The workspace jail").
func (p *Policy) Workspace(root string, clientRoots []string) (anchor string, err error) {
	allowed := p.roots
	note := p.rootsNote
	if p.clientRoots.value {
		var usable []string
		for _, c := range clientRoots {
			c = filepath.Clean(c)
			if !filepath.IsAbs(c) || isFilesystemRoot(c) {
				continue // the filesystem root would jail nothing
			}
			if fi, err := os.Stat(c); err != nil || !fi.IsDir() {
				continue
			}
			usable = append(usable, c)
		}
		if len(usable) > 0 {
			allowed = append(allowed[:len(allowed):len(allowed)], usable...)
			note += " and the MCP client's roots"
		}
	}
	refuse := func(problem string) (string, error) {
		return "", &RootError{Root: root, Problem: problem, Allowed: allowed, Note: note,
			Fix: fmt.Sprintf("the person starts %s with --%s DIR (or lists it under roots: in a policy file given with --%s)", p.command, FlagAllowRoot, FlagPolicy)}
	}
	if !filepath.IsAbs(root) {
		return refuse("is not an absolute path")
	}
	root = filepath.Clean(root)
	if isFilesystemRoot(root) {
		return refuse("is the filesystem root, which would jail nothing")
	}
	fi, err := os.Stat(root)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return refuse("does not exist")
	case err != nil:
		return refuse("cannot be read: " + err.Error())
	case !fi.IsDir():
		return refuse("is not a directory")
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return refuse("cannot be resolved: " + err.Error())
	}
	var linkProblem string
	for _, a := range allowed {
		base, problem := within(a, root, real)
		if base != "" {
			return base, nil
		}
		if problem != "" {
			linkProblem = problem
		}
	}
	if linkProblem != "" {
		return refuse(linkProblem)
	}
	if real != root {
		return refuse(fmt.Sprintf("resolves to %s, which is outside the allowed roots", real))
	}
	return refuse("is outside the allowed roots")
}

// within returns the real path of the allowed root a when root (resolving
// to real) lies inside it, written below a or below a's real path with no
// symbolic link after it, and "" otherwise. problem says why a root that
// resolves inside a is refused.
func within(a, root, real string) (base, problem string) {
	aReal, err := filepath.EvalSymlinks(a)
	if err != nil {
		return "", "" // a root that vanished allows nothing
	}
	if !inside(aReal, real) {
		return "", ""
	}
	for _, base := range []string{a, aReal} {
		if !inside(base, root) {
			continue
		}
		if link := firstLink(base, root); link != "" {
			return "", fmt.Sprintf("goes through the symbolic link %s below the allowed root %s (a link can be pointed elsewhere later); give the directory's real path", link, a)
		}
		return aReal, ""
	}
	return "", fmt.Sprintf("reaches the allowed root %s only through a symbolic link; give the directory's path inside it", a)
}

// firstLink returns the first path from base down to p (p inside base)
// that is a symbolic link, or "".
func firstLink(base, p string) string {
	rel, err := filepath.Rel(base, p)
	if err != nil || rel == "." {
		return ""
	}
	cur := base
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		if fi, err := os.Lstat(cur); err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return cur
		}
	}
	return ""
}

// inside reports whether p is base or below it (both clean and absolute).
func inside(base, p string) bool {
	if p == base {
		return true
	}
	rel, err := filepath.Rel(base, p)
	return err == nil && filepath.IsLocal(rel)
}
