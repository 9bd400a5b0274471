package expr

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
// inside the workspace root, the jail of every file check (spec/ir.md
// 11.11):
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
func ResolveInWorkspace(root, rel string) (string, error) {
	if root == "" {
		return "", jailError("file function requires a workspace root")
	}
	if rel == "" {
		return "", jailError("file path must not be empty")
	}
	if strings.ContainsRune(rel, 0) {
		return "", jailError("file path must not contain NUL")
	}
	if isAbsoluteAnywhere(rel) {
		return "", jailError("absolute file path %s is not allowed; use a path relative to the workspace", quoteJSON(rel))
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", &Error{Code: CodeValidation, Message: fmt.Sprintf("workspace root %s: %v", root, err), Offset: -1, Err: err}
	}
	candidate := filepath.Join(absRoot, rel)
	if !within(absRoot, candidate) {
		return "", jailError("file path %s escapes the workspace root", quoteJSON(rel))
	}
	if _, err := os.Stat(candidate); err != nil {
		return candidate, nil // missing (or unreadable): nothing to follow
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return "", &Error{Code: CodeValidation, Message: fmt.Sprintf("file path could not be resolved: %v", err), Offset: -1, Err: err}
	}
	realCandidate, err := filepath.EvalSymlinks(candidate)
	if err != nil {
		return "", &Error{Code: CodeValidation, Message: fmt.Sprintf("file path could not be resolved: %v", err), Offset: -1, Err: err}
	}
	if !within(realRoot, realCandidate) {
		return "", jailError("file path %s resolves outside the workspace root", quoteJSON(rel))
	}
	return realCandidate, nil
}

// FileExists is file_exists(rel) in the workspace root: true exactly when
// the path, symlinks followed inside the jail, is a regular file.
// Directories, missing paths and dangling symlinks are false.
func FileExists(root, rel string) (bool, error) {
	path, err := ResolveInWorkspace(root, rel)
	if err != nil {
		return false, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return false, nil
	}
	return info.Mode().IsRegular(), nil
}

// FileContains is file_contains(rel, text) in the workspace root: whether
// the file's content, decoded as UTF-8 (invalid sequences read as U+FFFD),
// contains text. A missing path, a directory or another non-regular file is
// false. A final symlink is not followed when the file is opened (so a
// dangling symlink, or one swapped in after the jail check, is a
// validation_error), and a file over MaxFileBytes is a validation_error.
func FileContains(root, rel, text string) (bool, error) {
	path, err := ResolveInWorkspace(root, rel)
	if err != nil {
		return false, err
	}
	f, err := openNoFollow(path)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		case isSymlinkLoop(err):
			return false, &Error{Code: CodeValidation, Message: fmt.Sprintf("file path %s is a symlink that cannot be followed safely (dangling, or changed after the jail check)", quoteJSON(rel)), Offset: -1, Err: err}
		}
		return false, &Error{Code: CodeValidation, Message: fmt.Sprintf("file %s could not be opened: %v", quoteJSON(rel), err), Offset: -1, Err: err}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return false, &Error{Code: CodeValidation, Message: fmt.Sprintf("file %s could not be read: %v", quoteJSON(rel), err), Offset: -1, Err: err}
	}
	if !info.Mode().IsRegular() {
		return false, nil
	}
	tooBig := jailError("file %s is larger than the %d-byte file_contains limit", quoteJSON(rel), MaxFileBytes)
	if info.Size() > MaxFileBytes {
		return false, tooBig
	}
	// Never trust the size snapshot: read at most one byte past the cap.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return false, &Error{Code: CodeValidation, Message: fmt.Sprintf("file %s could not be read: %v", quoteJSON(rel), err), Offset: -1, Err: err}
	}
	if len(data) > MaxFileBytes {
		return false, tooBig
	}
	if utf8.Valid(data) {
		return strings.Contains(string(data), text), nil
	}
	return strings.Contains(decodeUTF8Lossy(data), text), nil
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
