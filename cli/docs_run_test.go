package cli

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsCommandsRun runs every stratum command of docs/*.md (the
// commands [docCommands] reads, which TestDocsCommandsParse parses) as
// the doc shows it, and those of README.md that its own tests
// (TestReadmeTour, TestReadmeCommands) do not. Each doc is one tour: its
// commands run in order, each with sh -e, in one directory that holds a
// copy of the repository's top-level files and examples/, the doc's
// fixtures from testdata/docs/<doc>/, and a fresh HOME (nothing in
// ~/.stratum; testdata/docs/home and the files the doc shows under ~/),
// or, for the docs of [docModuleCopies], a copy of the whole module. A
// command of a shell block runs with the block's lines since its previous
// command (a heredoc, a cd, the head of a pipe; in a list's indented
// blocks, the list's lines since its previous command); a cd carries over
// to the doc's next command. The stratum on PATH is this test binary
// (TestMain) until a tour builds its own, a claude on PATH
// testdata/docs/bin/claude; there is no ssh-agent, and ssh-keygen's
// passphrase prompts are answered by testdata/docs/askpass.sh.
//
// The placeholders of [docPlaceholders] become real values; every other
// word runs as written, except the few rewrites of [docRewrites] and
// stratum serve's port, after the [docSetups] the doc leaves to its
// reader. A command must then exit 0, or as
// [docExpectations] says (with the doc's own words for why); a command
// the prose names without its arguments (`stratum gate show`) exits 0 or
// asks for them with its usage line. stratum mcp answers initialize and
// tools/list on its stdin, stratum serve its first page; a command on
// PostgreSQL runs on [pgtest.DSN] or is skipped with pgtest's line. An
// expectation, setup or rewrite that matches no docs command fails the
// test.
//
// docs/guard.md's operator workflow runs so from key to spent signature:
// ssh-keygen makes a key with a passphrase, step 2 enrols it in the
// module copy's guard/guard-signers.allowed and the tour rebuilds stratum
// from that copy (a rewrite: the doc says "rebuild" without a command),
// authorize, sign and override must answer the doc's deviation authorized
// by alice, the same signature spent again must be refused, and the
// signed descriptor file must show its digest, signer and descriptors.
// ssh-keygen and jq must be on PATH (.ci/run installs them).
func TestDocsCommandsRun(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "README.md"))
	readme := readRepoFile(t, "README.md")
	run := &docsRun{goEnv: goEnvFor(t), used: map[string]bool{}, named: map[string]docResult{}}
	used := run.used
	ran, readmeRan := 0, 0
	toured := map[string]bool{} // the docs whose tour ran (all unless -run picks some)
	for _, path := range files {
		name := filepath.Base(path)
		cmds := docCommands(t, path)
		t.Run(name, func(t *testing.T) {
			toured[name] = true
			tour := newDocTour(t, name, run)
			for _, c := range cmds {
				if name == "README.md" && !c.inline && !c.launched {
					// README's blocks are TestReadmeTour's and
					// TestReadmeCommands': they run them as one
					// shell session (its $run) after go install.
					if !ranByReadmeTests(t, readme, c) {
						t.Errorf("README.md:%d: %s: neither TestReadmeTour nor TestReadmeCommands runs it", c.line, c.text)
					}
					readmeRan++
					continue
				}
				tour.exec(c)
				ran++
			}
		})
	}
	for _, e := range docExpectations {
		if toured[e.file] && !used["expect "+e.file+": "+e.command] {
			t.Errorf("docExpectations: %s: no command %q (any more): drop or update the entry", e.file, e.command)
		}
	}
	for _, s := range docSetups {
		if toured[s.file] && !used["setup "+s.file+": "+s.before] {
			t.Errorf("docSetups: %s: no command %q (any more): drop or update the entry", s.file, s.before)
		}
	}
	for _, r := range docRewrites {
		if toured[r.file] && !used["rewrite "+r.file+": "+r.from] {
			t.Errorf("docRewrites: %s: no command contains %q (any more): drop or update the entry", r.file, r.from)
		}
	}
	t.Logf("%d stratum commands of docs/*.md and README.md run here, %d of README.md's blocks by TestReadmeTour and TestReadmeCommands", ran, readmeRan)
	if len(toured) == len(files) && ran < 100 {
		t.Fatalf("only %d commands run: is the reader broken?", ran)
	}
}

// ranByReadmeTests tells whether c, a command of a block of README.md, is
// one that TestReadmeTour or TestReadmeCommands runs.
func ranByReadmeTests(t *testing.T, readme string, c docCommand) bool {
	tour := map[string]bool{}
	for line := range strings.Lines(readmeTour(t, readme)) {
		tour[strings.TrimSpace(line)] = true
	}
	inTour := true
	for line := range strings.Lines(c.script) {
		inTour = inTour && tour[strings.TrimSpace(line)]
	}
	if inTour {
		return true
	}
	for _, r := range readmeRuns {
		if i := strings.Index(readme, r.prefix); r.file == "README.md" && i >= 0 && strings.Count(readme[:i], "\n")+1 == c.line {
			return true
		}
	}
	return false
}

// docPlaceholders are the words of docs commands that stand for a value
// the reader has: the tour puts in its own, made by the command named.
var docPlaceholders = map[string]string{
	"RUN":  "the id of a run the tour made (stratum run of testdata/docs/run.yaml --gate stop), stopped at its gate",
	"STEP": "that run's step under review, work, which changed a file of its git workspace",
	"HASH": "that run's head hash (stratum audit RUN --head)",
	"DIR":  "that run's workspace, a git repository",
	"ID":   "the guard resource docs/guard.md registers (compose:FEAT-1)",
	"HEAD": "that resource's head (stratum guard verify ID)",
}

// placeholderWord finds the placeholders of a command line: the words
// of docPlaceholders.
var placeholderWord = regexp.MustCompile(`\b(` + strings.Join(slices.Sorted(maps.Keys(docPlaceholders)), "|") + `)\b`)

// docRewrite changes a command before it runs; each has a reason. In to,
// {tmp} is the tour's temporary directory and {dsn} a fresh schema of
// internal/pgtest.
type docRewrite struct {
	file, from, to, why string
}

var docRewrites = []docRewrite{
	{"agents.md", "/tmp/quickstart-agent", "{tmp}/quickstart-agent", "the test writes only in its own temporary directory"},
	{"guard.md", `>> guard/guard-signers.allowed`, ">> guard/guard-signers.allowed\ngo build -o {tmp}/bin/stratum ./cmd/stratum",
		`step 2's "commit, rebuild and deploy stratum", for which the doc shows no command: the tour builds stratum from its ` +
			"copy of the module (not a git repository: nothing to commit) onto the front of its PATH, so that the next commands " +
			"run a stratum whose compiled trust root lists the key (without -trimpath: the module's packages compile again, " +
			"since the temporary path is part of their cache keys, but the standard library and the dependencies come from " +
			"the build cache the test binary was built with; -trimpath would compile those too on a fresh machine, ~2 min on CI)"},
	{"guard.md", "/etc/stratum/upgrades.json", "{tmp}/work/etc/stratum/upgrades.json",
		"the test writes only in its own temporary directory; testdata/docs/guard/etc/stratum/upgrades.json is a descriptor " +
			"file as the doc shows it, which upgrades compose:FEAT-1 as registered by the quick start"},
	{"storage.md", "postgres://stratum:PASSWORD@db.example:5432/stratum?sslmode=verify-full", "{dsn}",
		"the doc's server is an example: the command runs on a schema of internal/pgtest"},
}

// docModuleCopies are the docs whose tour runs in a copy of the whole
// module rather than of its top-level files and examples/, with why.
var docModuleCopies = map[string]string{
	"guard.md": "the operator workflow enrols a key in guard/guard-signers.allowed and rebuilds stratum from the source",
}

// docSetup is what a tour does before a command that the doc leaves to its
// reader (where to be, the state the command starts from); it must exit 0
// with want in its output. In script, {tmp} is the tour's temporary
// directory.
type docSetup struct {
	file, before string // the doc and the command as docCommands reads it
	script, want string
	why          string
}

var docSetups = []docSetup{
	{file: "guard.md", before: "stratum guard authorize",
		script: "cd {tmp}/work\n" + `echo '{"resource_id":"compose:FEAT-1","from_state":"review","to_state":"draft","artifacts":{}}' | stratum guard transition`,
		want:   `{"status":"applied"`,
		why: "the operator workflow runs in the stratum source tree (step 2 appends to guard/guard-signers.allowed), the " +
			"tour's copy of the module; its override moves compose:FEAT-1 from draft, where the quick start left it " +
			"at review: review->draft, declared without predicates, takes it back"},
}

// docExpectation is what a docs command does when that is not exit 0, or
// what the doc says its output shows.
type docExpectation struct {
	file, command string // the doc and the command as docCommands reads it
	exit          int
	want          string // in its output (stdout and stderr), when set; "…" elides
	why           string // what the doc says
	// When againWant is set, the command's script then runs a second time
	// from againFrom on (the command's own lines, not the steps before it
	// that made its input) and must exit againExit with againWant in its
	// output.
	againFrom           string
	againExit           int
	againWant, againWhy string
}

var docExpectations = []docExpectation{
	{file: "agents.md", command: "stratum run my-flow.yaml --agent /tmp/quickstart-agent", want: "draft: attempt 2 accepted",
		why: "the example agent answers draft wrongly on its first attempt, so that an ensure fails and the retry passes"},
	{file: "expressions.md", command: `stratum eval --bindings out.json 'result.confidence > 0.7 && len(result.label) > 0'`,
		want: `{"value":true}`, why: "the output the doc shows"},
	{file: "expressions.md", command: `stratum eval --bindings - 'len(result.files) >= 2'`,
		want: `{"value":false}`, why: "the output the doc shows"},
	{file: "expressions.md", command: `stratum eval --workspace . 'file_contains("README.md", "# Stratum")'`,
		want: `{"value":true}`, why: "the output the doc shows"},
	{file: "guard.md", command: "stratum guard ACTION", exit: 1, want: "Unknown guard action: ACTION",
		why: "an unknown action: `Unknown guard action: X. ...` on stderr, exit 1"},
	{file: "guard.md", command: "stratum guard override", want: `{"status":"deviation",…,"authorized_by":"alice (SHA256:`,
		why:       `the output the doc shows: {"status":"deviation",…,"authorized_by":"alice (SHA256:…)",…}`,
		againFrom: "jq -n --rawfile sig payload.json.sig", againExit: 1, againWant: `"error_type":"override_unavailable",…the payload changed since it was signed`,
		againWhy: "step 5 alone, with the payload.json.sig of step 4: Spending the same signature again fails: the head has moved"},
	{file: "guard.md", command: "stratum guard descriptors",
		want: `{"status":"ok",…,"sha256":"…","group_or_world_writable":false,…,"signature":"verified: signed by alice (SHA256:…)",` +
			`"allowed_signers":[{"principal":"alice","fingerprint":"SHA256:…"}],"descriptors":[{"id":"feat-v2",`,
		why: "shows the digest, the signer and the descriptors"},
	{file: "policy.md", command: "stratum validate --for run spec.yaml", exit: 1, want: `refused: step "check" of flow "main" runs the command`,
		why: "lists the effects, exit 1 if refused (the command the next line allows)"},
	resumeAtGate("agents.md"), resumeAtGate("cli.md"), resumeAtGate("policy.md"), resumeAtGate("README.md"),
	{file: "README.md", command: "stratum guard ACTION", exit: 1, want: "Unknown guard action: ACTION",
		why: "docs/guard.md: an unknown action: `Unknown guard action: X. ...` on stderr, exit 1"},
}

// resumeAtGate is what stratum run --resume RUN does with the tour's RUN,
// which waits at its gate: cli.md, "stop (default otherwise): once nothing
// but gates is left, exits 3".
func resumeAtGate(file string) docExpectation {
	return docExpectation{file: file, command: "stratum run --resume RUN", exit: 3, want: "is waiting at gate review",
		why: "RUN waits at its gate, where a resumed run without a terminal stops again (cli.md: 3 stopped at a gate)"}
}
