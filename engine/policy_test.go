package engine

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// denyKinds is a policy that refuses some kinds of effect and every
// workspace root outside one directory.
type denyKinds struct {
	deny map[EffectKind]bool
	root string
}

func (p denyKinds) Allow(f Effect) error {
	if p.deny[f.Kind] {
		return fmt.Errorf("%s: not allowed here (pass --allow-%s)", f, f.Kind)
	}
	return nil
}

func (p denyKinds) Workspace(root string, _ []string) (string, error) {
	if p.root != "" && root != p.root {
		return "", fmt.Errorf("%s is outside the allowed root %s", root, p.root)
	}
	return p.root, nil
}

func TestSpecEffects(t *testing.T) {
	h := newHarness(t, Options{})
	c, err := h.e.compileSource([]byte(evaluateSpec("make check", 1000)))
	if err != nil {
		t.Fatal(err)
	}
	got := SpecEffects(c.plan)
	if len(got) != 1 || got[0].Kind != EffectCommand || got[0].Command != "make check" || got[0].StepID != "check" {
		t.Fatalf("effects %s", dump(got))
	}
}

// A spec that needs a refused effect is refused at plan time, with the
// refusal's words, and nothing is persisted or run.
func TestPolicyRefusesAtPlanTime(t *testing.T) {
	h := newHarness(t, Options{Policy: denyKinds{deny: map[EffectKind]bool{EffectCommand: true}}})
	_, err := h.e.Plan(h.ctx, PlanRequest{Spec: []byte(evaluateSpec("touch ran", 1000)), Input: js(map[string]any{"n": 1})})
	var ee *Error
	if !errors.As(err, &ee) || ee.Code() != CodeEffectNotAllowed || !strings.Contains(ee.Message, `step "check" of flow "main" runs the command "touch ran"`) ||
		!strings.Contains(ee.Message, "--allow-command") {
		t.Fatalf("plan: %v", err)
	}
	if infos, err := h.store.List(h.ctx); err != nil || len(infos) != 0 {
		t.Fatalf("runs after a refused plan: %v %v", infos, err)
	}
	if fileExists(h.ws + "/ran") {
		t.Fatal("the refused command ran")
	}
	// The same spec is planned where commands are allowed.
	h2 := newHarness(t, Options{Policy: denyKinds{deny: map[EffectKind]bool{EffectAgent: true}}})
	if _, err := h2.e.Plan(h2.ctx, PlanRequest{Spec: []byte(evaluateSpec(closedVerdict, 1000)), Input: js(map[string]any{"n": 1})}); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyRefusesWorkspaceRoot(t *testing.T) {
	h := newHarness(t, Options{})
	h.e = New(h.store, withExecutors(Options{Policy: denyKinds{root: h.ws}, Workspace: WorkspacePolicy{Default: h.ws}}, t.TempDir()))
	_, err := h.e.Plan(h.ctx, PlanRequest{Spec: []byte(twoSteps), Input: js(map[string]any{"x": "X"}), WorkspaceRoot: "/"})
	if !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "outside the allowed root") {
		t.Fatalf("plan with / as workspace: %v", err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
