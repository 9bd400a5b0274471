package guard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/stratum-go/stratum/guard/internal/sshsig"
)

// maxDescriptorFile bounds the descriptor file read.
const maxDescriptorFile = 8 << 20

// maxSignatureFile bounds the detached signature read (an armored Ed25519
// SSH signature is about 300 bytes).
const maxSignatureFile = 64 << 10

// descriptor is one reviewed upgrade: exactly this target policy, only
// from the policy whose checksum is FromChecksum.
type descriptor struct {
	ID           string
	Rationale    string
	FromChecksum string
	ToPolicy     PolicyInput
}

// descriptorFile is a loaded descriptor file. Everything derives from one
// read of the file's bytes: the signature check, the digest and the
// parse, so what was verified is what is used.
type descriptorFile struct {
	path        string
	sha256      string
	writable    bool // group- or world-writable
	sigPath     string
	signer      *sshsig.Verified
	sigErr      error
	trust       *sshsig.AllowedSigners
	trustErr    error
	descriptors []descriptor
	// parseErr is a schema error of the file; it is reported only after
	// the signature checks, so nothing of an unauthenticated file is
	// interpreted first.
	parseErr error
}

func unavailable(format string, args ...any) error {
	return errorf(CodeDescriptorUnavailable, format, args...)
}

// readDescriptorFile reads the configured descriptor file and checks its
// signature, without failing on a bad signature, trust root or schema
// (those are recorded), so that `stratum guard descriptors` can report
// them and apply_upgrade can refuse in the order of docs/guard.md, "Order
// of the checks".
func (g *Guard) readDescriptorFile() (*descriptorFile, error) {
	path := g.getenv(EnvUpgradeDescriptors)
	if path == "" {
		return nil, unavailable("%s is not set in the server environment", EnvUpgradeDescriptors)
	}
	if !filepath.IsAbs(path) {
		return nil, unavailable("%s=%q is not an absolute path", EnvUpgradeDescriptors, path)
	}
	df := &descriptorFile{path: path, sigPath: path + ".sig"}
	df.trust, df.trustErr = g.trustRoot()
	f, err := os.Open(path)
	if err != nil {
		return nil, unavailable("descriptor file %s is not readable: %v", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, unavailable("descriptor file %s is not a regular file", path)
	}
	df.writable = fi.Mode().Perm()&0o022 != 0
	data, err := io.ReadAll(io.LimitReader(f, maxDescriptorFile+1))
	if err != nil {
		return nil, unavailable("descriptor file %s is not readable: %v", path, err)
	}
	if len(data) > maxDescriptorFile {
		return nil, unavailable("descriptor file %s is larger than %d bytes", path, maxDescriptorFile)
	}
	sum := sha256.Sum256(data)
	df.sha256 = hex.EncodeToString(sum[:])
	sig, err := readBounded(df.sigPath, maxSignatureFile)
	switch {
	case err != nil:
		df.sigErr = fmt.Errorf("not signed: %s is missing or unreadable: %v", df.sigPath, err)
	case df.trustErr != nil:
		df.sigErr = fmt.Errorf("trust root unusable: %v", df.trustErr)
	default:
		v, err := sshsig.Verify(string(sig), data, NamespaceDescriptors, df.trust)
		if err != nil {
			df.sigErr = fmt.Errorf("signature rejected: %v", err)
		} else {
			df.signer = &v
		}
	}
	df.descriptors, df.parseErr = parseDescriptors(data)
	return df, nil
}

// readBounded reads at most limit bytes of the file at path; a longer file
// is an error.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// loadDescriptor is the whole gate of apply_upgrade (docs/guard.md, "Order of
// the checks"): every failure, whether not configured, tampered, malformed,
// unsigned or an unknown id, is the same upgrade_descriptor_unavailable.
func (g *Guard) loadDescriptor(id string) (*descriptorFile, *descriptor, error) {
	df, err := g.readDescriptorFile()
	if err != nil {
		return nil, nil, err
	}
	if df.trustErr != nil {
		return nil, nil, unavailable("trust root unusable: %v", df.trustErr)
	}
	if df.writable {
		return nil, nil, unavailable("descriptor file %s is group- or world-writable", df.path)
	}
	if df.signer == nil {
		return nil, nil, unavailable("descriptor file %s: %v", df.path, df.sigErr)
	}
	if df.parseErr != nil {
		return nil, nil, unavailable("descriptor file %s: %v", df.path, df.parseErr)
	}
	for i := range df.descriptors {
		if df.descriptors[i].ID == id {
			return df, &df.descriptors[i], nil
		}
	}
	return nil, nil, unavailable("no descriptor %q in %s", id, df.path)
}

// strictObject decodes a JSON object and requires exactly the given keys.
func strictObject(raw json.RawMessage, what string, keys ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s must be a JSON object", what)
	}
	for k := range m {
		known := false
		for _, want := range keys {
			known = known || k == want
		}
		if !known {
			return nil, fmt.Errorf("%s has unknown key %q", what, k)
		}
	}
	for _, want := range keys {
		if _, ok := m[want]; !ok {
			return nil, fmt.Errorf("%s is missing %q", what, want)
		}
	}
	return m, nil
}

func isChecksum(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func decodeAny(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var v any
	err := dec.Decode(&v)
	return v, err
}

// parseDescriptors reads the descriptor schema: {"version": 1,
// "descriptors": [{id, rationale, from_checksum, to_policy: {graph,
// edge_predicates, terminal, stakes}}]}, with unknown keys anywhere and
// duplicate ids refused.
func parseDescriptors(data []byte) ([]descriptor, error) {
	top, err := strictObject(data, "the file", "version", "descriptors")
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(top["version"])) != "1" {
		return nil, errors.New(`"version" must be 1`)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(top["descriptors"], &items); err != nil || items == nil {
		return nil, errors.New(`"descriptors" must be an array`)
	}
	seen := map[string]bool{}
	out := make([]descriptor, 0, len(items))
	for i, item := range items {
		what := fmt.Sprintf("descriptors[%d]", i)
		m, err := strictObject(item, what, "id", "rationale", "from_checksum", "to_policy")
		if err != nil {
			return nil, err
		}
		var d descriptor
		if json.Unmarshal(m["id"], &d.ID) != nil || !isDescriptorID(d.ID) {
			return nil, fmt.Errorf("%s.id must match ^[A-Za-z0-9_.-]+$", what)
		}
		if seen[d.ID] {
			return nil, fmt.Errorf("duplicate descriptor id %q", d.ID)
		}
		seen[d.ID] = true
		if json.Unmarshal(m["rationale"], &d.Rationale) != nil || blank(d.Rationale) {
			return nil, fmt.Errorf("%s.rationale must be a non-blank string", what)
		}
		if json.Unmarshal(m["from_checksum"], &d.FromChecksum) != nil || !isChecksum(d.FromChecksum) {
			return nil, fmt.Errorf("%s.from_checksum must be 64 lowercase hex digits", what)
		}
		pol, err := strictObject(m["to_policy"], what+".to_policy", "graph", "edge_predicates", "terminal", "stakes")
		if err != nil {
			return nil, err
		}
		fields := map[string]any{}
		for _, k := range []string{"graph", "edge_predicates", "terminal", "stakes"} {
			v, err := decodeAny(pol[k])
			if err != nil {
				return nil, fmt.Errorf("%s.to_policy.%s: %v", what, k, err)
			}
			fields[k] = v
		}
		var ok bool
		if d.ToPolicy.Graph, ok = fields["graph"].(map[string]any); !ok {
			return nil, fmt.Errorf("%s.to_policy.graph must be an object", what)
		}
		if d.ToPolicy.EdgePredicates, ok = fields["edge_predicates"].(map[string]any); !ok {
			return nil, fmt.Errorf("%s.to_policy.edge_predicates must be an object", what)
		}
		if _, ok = fields["terminal"].([]any); !ok {
			return nil, fmt.Errorf("%s.to_policy.terminal must be an array", what)
		}
		d.ToPolicy.Terminal = fields["terminal"]
		if d.ToPolicy.Stakes, ok = fields["stakes"].(map[string]any); !ok {
			return nil, fmt.Errorf("%s.to_policy.stakes must be an object", what)
		}
		out = append(out, d)
	}
	return out, nil
}

// isDescriptorID: ids share the state-name character class but may be
// reserved words (they are never object keys).
func isDescriptorID(s string) bool {
	return s != "" && validStateName("x"+s)
}

// ApplyUpgradeRequest names a signed, installed descriptor
// (stratum_guard_apply_upgrade).
type ApplyUpgradeRequest struct {
	ResourceID   string `json:"resource_id" jsonschema:"the guarded resource"`
	DescriptorID string `json:"descriptor_id" jsonschema:"id of a descriptor in the server's signed descriptor file"`
}

// ApplyUpgradeResult is {status: "applied"|"unchanged", ...}.
type ApplyUpgradeResult struct {
	Status       string `json:"status" jsonschema:"applied, or unchanged when the resource was already at the target policy"`
	Checksum     string `json:"checksum" jsonschema:"the checksum of the policy now in force"`
	GraphVersion int64  `json:"graph_version" jsonschema:"the policy version now in force"`
	LedgerRef    string `json:"ledger_ref,omitempty" jsonschema:"the digest of the graph_version ledger entry recording the change (absent when unchanged)"`
	DescriptorID string `json:"descriptor_id" jsonschema:"the descriptor applied"`
	// Warning: see TransitionResult.Warning.
	Warning string `json:"warning,omitempty" jsonschema:"set only when the attempt was recorded but a write after its commit failed: what happened; the next operation completes the record"`
}

// ApplyUpgrade moves a resource to exactly the reviewed target policy of a
// signed descriptor, only from the reviewed source policy. The descriptor
// is loaded and verified before the resource is touched, so a caller
// without a configured descriptor set learns nothing about resources.
func (g *Guard) ApplyUpgrade(ctx context.Context, req ApplyUpgradeRequest) (*ApplyUpgradeResult, error) {
	if err := validateResourceID(req.ResourceID); err != nil {
		return nil, err
	}
	df, d, err := g.loadDescriptor(req.DescriptorID)
	if err != nil {
		return nil, err
	}
	h, r, dir, err := g.openExisting(ctx, req.ResourceID)
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	if err := r.tamperCheck(); err != nil {
		return nil, err
	}
	target, err := inputChecksum(d.ToPolicy)
	if err != nil {
		return nil, err
	}
	// Destination before source, so a partly applied fleet batch re-runs.
	if target == r.Checksum {
		return &ApplyUpgradeResult{Status: "unchanged", Checksum: target, GraphVersion: r.GraphVersion, DescriptorID: d.ID}, nil
	}
	if r.Checksum != d.FromChecksum {
		return nil, errorf(CodeDescriptorMismatch, "resource %q has policy %s; descriptor %q upgrades only from %s (to %s)", req.ResourceID, r.Checksum, d.ID, d.FromChecksum, target)
	}
	// Authorized is not the same as well formed.
	p, err := validatePolicy(d.ToPolicy, validation{initial: r.Initial, workspaceRoot: r.WorkspaceRoot, allowCommands: g.allowCommands()})
	if err != nil {
		return nil, err
	}
	rationale := fmt.Sprintf("descriptor %s signed by %s (%s, file sha256 %s): %s", d.ID, df.signer.Principal, df.signer.Fingerprint, df.sha256, d.Rationale)
	warning, err := g.commitPolicy(h, dir, r, p, target, "human", rationale)
	if err != nil {
		return nil, err
	}
	return &ApplyUpgradeResult{Status: "applied", Checksum: target, GraphVersion: r.GraphVersion, LedgerRef: r.Log.Head, DescriptorID: d.ID, Warning: warning}, nil
}

// DescriptorsResult reports the configured descriptor file for operators
// (`stratum guard descriptors`); problems with the signature or trust root
// are reported in Signature rather than failing.
type DescriptorsResult struct {
	Status               string           `json:"status"`
	Path                 string           `json:"path"`
	SHA256               string           `json:"sha256"`
	GroupOrWorldWritable bool             `json:"group_or_world_writable"`
	SignaturePath        string           `json:"signature_path"`
	Signature            string           `json:"signature"`
	AllowedSigners       []SignerInfo     `json:"allowed_signers"`
	Descriptors          []DescriptorInfo `json:"descriptors"`
}

// SignerInfo is one trust-root signer.
type SignerInfo struct {
	Principal   string `json:"principal"`
	Fingerprint string `json:"fingerprint"`
}

// DescriptorInfo summarises one descriptor.
type DescriptorInfo struct {
	ID           string `json:"id"`
	Rationale    string `json:"rationale"`
	FromChecksum string `json:"from_checksum"`
}

// Descriptors reads and checks the configured descriptor file. An unset or
// relative path, an unreadable file or a schema error is an error; a bad
// signature or trust root is reported in the result.
func (g *Guard) Descriptors(ctx context.Context) (*DescriptorsResult, error) {
	df, err := g.readDescriptorFile()
	if err != nil {
		return nil, err
	}
	if df.parseErr != nil {
		return nil, unavailable("descriptor file %s: %v", df.path, df.parseErr)
	}
	res := &DescriptorsResult{
		Status: "ok", Path: df.path, SHA256: df.sha256, GroupOrWorldWritable: df.writable,
		SignaturePath: df.sigPath, AllowedSigners: []SignerInfo{}, Descriptors: []DescriptorInfo{},
	}
	if df.signer != nil {
		res.Signature = "verified: signed by " + authorizedBy(*df.signer)
	} else {
		res.Signature = "NOT VERIFIED: " + df.sigErr.Error()
	}
	if df.trust != nil {
		for _, s := range df.trust.Signers() {
			res.AllowedSigners = append(res.AllowedSigners, SignerInfo{Principal: strings.Join(s.Principals, ","), Fingerprint: s.Fingerprint})
		}
	}
	for _, d := range df.descriptors {
		res.Descriptors = append(res.Descriptors, DescriptorInfo{ID: d.ID, Rationale: d.Rationale, FromChecksum: d.FromChecksum})
	}
	return res, nil
}
