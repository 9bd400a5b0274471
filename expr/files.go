package expr

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// MaxFileBytes is the largest file file_contains reads (16 MiB); a larger
// file is a validation_error.
const MaxFileBytes = 16 << 20

func jailError(format string, args ...any) *Error {
	return newError(CodeValidation, fmt.Sprintf(format, args...))
}

// isAbsoluteAnywhere reports whether path is absolute under POSIX or
// Windows rules: a leading '/' or '\' (which covers \\server\share), or a
// drive letter followed by ':' and a separator. "C:x" is relative.
func isAbsoluteAnywhere(path string) bool {
	if path == "" {
		return false
	}
	if path[0] == '/' || path[0] == '\\' {
		return true
	}
	if len(path) > 2 && (path[0]|0x20 >= 'a' && path[0]|0x20 <= 'z') && path[1] == ':' && (path[2] == '/' || path[2] == '\\') {
		return true
	}
	return filepath.IsAbs(path)
}

// within reports whether target is root or lies below it (both cleaned).
func within(root, target string) bool {
	rel, err := filepath.Rel(root, target)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

// ResolveInWorkspace resolves rel, a path an expression or an ensure names,
// inside the workspace root, the jail of every file check
// (docs/expressions.md, "Files"):
//
//   - rel must be non-empty, without NUL, and not absolute under POSIX or
//     Windows rules ("/x", "\x", "C:\x", "C:/x", "\\server\share");
//   - resolved lexically against root ("." and ".." collapsed), it must stay
//     inside root;
//   - if it exists, its real path (symlinks followed) must stay inside the
//     real root; a symlink that points out of the workspace is refused.
//
// It returns the real path when the target exists, else the lexical one.
// An empty root is refused (it would otherwise mean the current directory).
// Every refusal is a *Error with code validation_error.
//
// The path it returns is a snapshot: a directory swapped for a symlink
// right after it returns would redirect an open of that path. FileExists,
// FileContains and the file functions of expressions therefore never open
// it; they open the resolved path through an [os.Root] of the workspace,
// which refuses at open time any component that leads out of it.
func ResolveInWorkspace(root, rel string) (string, error) {
	res, err := resolveIn(root, rel)
	if err != nil {
		return "", err
	}
	return res.display, nil
}

// resolution is where a path of the workspace was found.
type resolution struct {
	absRoot  string // the workspace root as given, made absolute
	realRoot string // the root with symlinks followed
	inRoot   string // the path to open, relative to realRoot (no "..")
	display  string // the absolute path, for results and messages
}

func resolveIn(root, rel string) (resolution, *Error) {
	var res resolution
	if root == "" {
		return res, jailError("file function requires a workspace root")
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return res, &Error{Code: CodeValidation, Message: fmt.Sprintf("workspace root %s: %v", root, err), Offset: -1, Err: err}
	}
	res.absRoot = absRoot
	if rel == "" {
		return res, jailError("file path must not be empty")
	}
	if strings.ContainsRune(rel, 0) {
		return res, jailError("file path must not contain NUL")
	}
	if isAbsoluteAnywhere(rel) {
		return res, jailError("absolute file path %s is not allowed; use a path relative to the workspace", quoteJSON(rel))
	}
	candidate := filepath.Join(absRoot, rel)
	if !within(absRoot, candidate) {
		return res, jailError("file path %s escapes the workspace root", quoteJSON(rel))
	}
	res.display = candidate
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return res, &Error{Code: CodeValidation, Message: fmt.Sprintf("workspace root %s could not be resolved: %v", absRoot, err), Offset: -1, Err: err}
	}
	res.realRoot = realRoot
	lexical, err := filepath.Rel(absRoot, candidate)
	if err != nil {
		return res, &Error{Code: CodeValidation, Message: fmt.Sprintf("file path could not be resolved: %v", err), Offset: -1, Err: err}
	}
	res.inRoot = lexical
	realTarget, err := filepath.EvalSymlinks(candidate)
	if err != nil {
		// Missing, a dangling or looping link, or unreadable: nothing to
		// follow. The open through the root decides what it is.
		return res, nil
	}
	if !within(realRoot, realTarget) {
		return res, jailError("file path %s resolves outside the workspace root", quoteJSON(rel))
	}
	inRoot, err := filepath.Rel(realRoot, realTarget)
	if err != nil {
		return res, &Error{Code: CodeValidation, Message: fmt.Sprintf("file path could not be resolved: %v", err), Offset: -1, Err: err}
	}
	res.inRoot, res.display = inRoot, realTarget
	return res, nil
}

// jail is where file functions may read: the workspace root and, when
// known, the allowed directory it was admitted under (see
// [EvalOptions.WorkspaceAnchor]).
type jail struct {
	root   string
	anchor string
}

// openJail opens the real workspace root as an [os.Root]: every open
// through it resolves each component at open time and refuses ".." or a
// symlink that leads out of the root, so a directory swapped after
// resolveIn cannot redirect the read. With an anchor, the root itself is
// opened through an [os.Root] of the anchor, so a root replaced since it
// was admitted (a symlink out in its place) cannot redirect it either; the
// anchor must still be the real path it was, and name the directory opened.
func openJail(res resolution, anchor string) (*os.Root, *Error) {
	if anchor == "" {
		r, err := os.OpenRoot(res.realRoot)
		if err != nil {
			return nil, &Error{Code: CodeValidation, Message: fmt.Sprintf("workspace root %s could not be opened: %v", res.absRoot, err), Offset: -1, Err: err}
		}
		return r, nil
	}
	replaced := func(err error) *Error {
		return &Error{Code: CodeValidation, Message: fmt.Sprintf("workspace root %s is no longer inside %s, the allowed directory it was admitted under (was it replaced after the run was planned?)", res.absRoot, anchor), Offset: -1, Err: err}
	}
	rel, err := filepath.Rel(anchor, res.realRoot)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return nil, replaced(err)
	}
	a, err := os.OpenRoot(anchor)
	if err != nil {
		return nil, &Error{Code: CodeValidation, Message: fmt.Sprintf("allowed directory %s of workspace root %s could not be opened: %v", anchor, res.absRoot, err), Offset: -1, Err: err}
	}
	defer a.Close()
	// The anchor is a real path (no symbolic link in it) when admitted: a
	// link in it now means a part of it was replaced. Checked after the
	// open, together with the identity of what was opened, so a part
	// swapped for a link during the open and back after it is caught too.
	// Below the anchor, the open through its os.Root refuses a link out.
	if err := sameDirectory(a, anchor); err != nil {
		return nil, replaced(err)
	}
	r, err := a.OpenRoot(rel)
	switch {
	case err == nil:
		return r, nil
	case refusedByRoot(err):
		return nil, replaced(err)
	}
	return nil, &Error{Code: CodeValidation, Message: fmt.Sprintf("workspace root %s could not be opened: %v", res.absRoot, err), Offset: -1, Err: err}
}

// sameDirectory checks that the path dir still is its own real path and
// names the directory r was opened on.
func sameDirectory(r *os.Root, dir string) error {
	if real, err := filepath.EvalSymlinks(dir); err != nil || real != dir {
		return fmt.Errorf("%s now resolves to %q: %v", dir, real, err)
	}
	opened, err := r.Stat(".")
	if err != nil {
		return err
	}
	now, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !os.SameFile(opened, now) {
		return fmt.Errorf("%s is not the directory that was opened", dir)
	}
	return nil
}

// refusedByRoot reports whether an error of an [os.Root] operation is the
// root's own refusal (a path that leads out of it) rather than an error of
// the operating system, which always carries a [syscall.Errno].
func refusedByRoot(err error) bool {
	var errno syscall.Errno
	return !errors.As(err, &errno)
}

func escapeError(rel string, err error) *Error {
	return &Error{Code: CodeValidation, Message: fmt.Sprintf("file path %s resolves outside the workspace root", quoteJSON(rel)), Offset: -1, Err: err}
}

// FileExists is file_exists(rel) in the workspace root: true exactly when
// the path, symlinks followed inside the jail, is a regular file.
// Directories, missing paths and dangling symlinks are false.
func FileExists(root, rel string) (bool, error) {
	fc := checkFileExists(jail{root: root}, rel)
	if fc.Err != nil {
		return false, fc.Err
	}
	return fc.Result, nil
}

// FileContains is file_contains(rel, text) in the workspace root: whether
// the file's content, decoded as UTF-8 (invalid sequences read as U+FFFD),
// contains text. A missing path, a directory or another non-regular file
// (a FIFO is opened without blocking) is false. A dangling symlink, a
// symlink loop and a file over MaxFileBytes are a validation_error.
func FileContains(root, rel, text string) (bool, error) {
	fc := checkFileContains(jail{root: root}, rel, text, nil)
	if fc.Err != nil {
		return false, fc.Err
	}
	return fc.Result, nil
}

func checkFileExists(j jail, rel string) FileCheck {
	fc := FileCheck{Func: "file_exists", Path: rel}
	res, err := resolveIn(j.root, rel)
	fc.Root, fc.Resolved = res.absRoot, res.display
	if err != nil {
		return fc.refused(err)
	}
	r, err := openJail(res, j.anchor)
	if err != nil {
		return fc.refused(err)
	}
	defer r.Close()
	info, serr := r.Stat(res.inRoot)
	switch {
	case serr == nil:
		fc.Found, fc.Size = kindOf(info.Mode()), info.Size()
		fc.Result = fc.Found == FileRegular
	case refusedByRoot(serr):
		return fc.refused(escapeError(rel, serr))
	default:
		fc.Found = notFoundKind(r, res.inRoot, serr)
	}
	return fc
}

// checkFileContains is file_contains; charge, when not nil, is charged for
// the bytes about to be read and can refuse them.
func checkFileContains(j jail, rel, text string, charge func(int) *Error) FileCheck {
	fc := FileCheck{Func: "file_contains", Path: rel, Text: text}
	res, err := resolveIn(j.root, rel)
	fc.Root, fc.Resolved = res.absRoot, res.display
	if err != nil {
		return fc.refused(err)
	}
	r, err := openJail(res, j.anchor)
	if err != nil {
		return fc.refused(err)
	}
	defer r.Close()
	f, oerr := r.OpenFile(res.inRoot, openFlags, 0)
	if oerr != nil {
		switch {
		case refusedByRoot(oerr):
			return fc.refused(escapeError(rel, oerr))
		case errors.Is(oerr, fs.ErrNotExist):
			fc.Found = notFoundKind(r, res.inRoot, oerr)
			if fc.Found == FileDanglingLink {
				return fc.refused(&Error{Code: CodeValidation, Message: fmt.Sprintf("file path %s is a dangling symlink", quoteJSON(rel)), Offset: -1, Err: oerr})
			}
			return fc
		case isSymlinkLoop(oerr):
			fc.Found = FileSymlinkLoop
			return fc.refused(&Error{Code: CodeValidation, Message: fmt.Sprintf("file path %s is a symlink that cannot be followed (a loop)", quoteJSON(rel)), Offset: -1, Err: oerr})
		}
		return fc.refused(&Error{Code: CodeValidation, Message: fmt.Sprintf("file %s could not be opened: %v", quoteJSON(rel), oerr), Offset: -1, Err: oerr})
	}
	defer f.Close()
	info, serr := f.Stat()
	if serr != nil {
		return fc.refused(&Error{Code: CodeValidation, Message: fmt.Sprintf("file %s could not be read: %v", quoteJSON(rel), serr), Offset: -1, Err: serr})
	}
	fc.Found, fc.Size = kindOf(info.Mode()), info.Size()
	if fc.Found != FileRegular {
		return fc
	}
	tooBig := jailError("file %s is larger than the %d-byte file_contains limit", quoteJSON(rel), MaxFileBytes)
	if info.Size() > MaxFileBytes {
		return fc.refused(tooBig)
	}
	if charge != nil {
		if err := charge(int(info.Size()) / bytesPerUnit); err != nil {
			return fc.refused(err)
		}
	}
	// Never trust the size snapshot: read at most one byte past the cap.
	data, rerr := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if rerr != nil {
		return fc.refused(&Error{Code: CodeValidation, Message: fmt.Sprintf("file %s could not be read: %v", quoteJSON(rel), rerr), Offset: -1, Err: rerr})
	}
	if len(data) > MaxFileBytes {
		return fc.refused(tooBig)
	}
	fc.Size = int64(len(data))
	if utf8.Valid(data) {
		fc.Result = strings.Contains(string(data), text)
	} else {
		fc.Result = strings.Contains(decodeUTF8Lossy(data), text)
	}
	return fc
}

func kindOf(m fs.FileMode) FileKind {
	switch {
	case m.IsRegular():
		return FileRegular
	case m.IsDir():
		return FileDirectory
	}
	return FileOther
}

// notFoundKind tells a missing path from a dangling symlink and a loop
// after a lookup through the root failed with err.
func notFoundKind(r *os.Root, inRoot string, err error) FileKind {
	if isSymlinkLoop(err) {
		return FileSymlinkLoop
	}
	if errors.Is(err, fs.ErrNotExist) {
		if info, lerr := r.Lstat(inRoot); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			return FileDanglingLink
		}
		return FileMissing
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && errno == syscall.ENOTDIR {
		return FileMissing // a component is a file: nothing can be below it
	}
	return FileUnreadable
}

// decodeUTF8Lossy decodes bytes as the WHATWG UTF-8 decoder (and so
// Node.js) does: each maximal ill-formed subsequence becomes one U+FFFD.
func decodeUTF8Lossy(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[i : i+size])
			i += size
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += maximalSubpart(b[i:])
	}
	return sb.String()
}

// maximalSubpart is the length of the longest prefix of b (which does not
// start a valid sequence) that is still the start of some well-formed
// sequence, at least 1.
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}

func quoteJSON(s string) string { return string(appendQuoted(nil, s)) }
