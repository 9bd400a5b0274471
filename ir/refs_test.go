package ir

import (
	"testing"
)

func TestParseRefContent(t *testing.T) {
	cases := map[string]string{
		"item": "item", "prev": "prev",
		"input.q": "input .q", "input.items[0].name": "input .items[0].name",
		"a.output": "step a", "a.output.x": "step a .x", "a.output[01]": "step a [1]", "a-b_c.output.x[2]": "step a-b_c .x[2]",
		"wave": "carry wave", "wave.tasks[0].id": "carry wave .tasks[0].id", "a.outputs": "carry a .outputs",
		"a.outputValue": "carry a .outputValue", "a.output_list": "carry a .output_list",
		"input": "carry input", "input[0]": "carry input [0]", "item.name": "carry item .name",
		"": "", " input.q ": "", "Build.output": "", "input.": "", "input.0": "", "input.bad-name": "",
		"input.items[-1]": "", "a.output.x-y": "", "toString": "", "a..output": "", "a.output.": "", "a[x]": "",
		"input.items[ 0]": "", "a.output[]": "",
	}
	for content, want := range cases {
		r := parseRefContent(content)
		got := ""
		if r != nil {
			switch r.Kind {
			case RefItem, RefPrev:
				got = r.Kind.String()
			case RefInput:
				got = "input " + pathString(r.Path)
			case RefStep:
				got = "step " + r.Name
				if len(r.Path) > 0 {
					got += " " + pathString(r.Path)
				}
			case RefCarry:
				got = "carry " + r.Name
				if len(r.Path) > 0 {
					got += " " + pathString(r.Path)
				}
			}
		}
		if got != want {
			t.Errorf("parseRefContent(%q) = %q, want %q", content, got, want)
		}
	}
}

func TestTemplateSyntax(t *testing.T) {
	cases := map[string]bool{
		"plain": true, "": true, "$ { } $5 {x}": true, "${a}}": true, "${a.output} and ${input.q}": true,
		"${input.q}${a.output}": true, "${": false, "x ${input.q": false, "${input.q} ${": false, "${}": false,
		"} ${input.q": false, "${ input.q }": false, "result.v != '${'": false, "${${input.q}}": false,
	}
	for s, ok := range cases {
		_, syn, _ := parseTemplate(s)
		if (syn == templateOK) != ok {
			t.Errorf("parseTemplate(%q) ok = %v, want %v", s, syn == templateOK, ok)
		}
	}
}

// FuzzTemplate checks that scanning never panics and that a well-formed
// template renders back to its own text when each reference renders as
// its token.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"Work on ${input.q}", "${a.output.x[0]}", "${item} ${prev}", "a ${", "${wave}}", "${input.items[01]}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tmpl, syn, tok := parseTemplate(s)
		if tmpl == nil || tmpl.Text != s {
			t.Fatal("template must keep its text")
		}
		if syn != templateOK {
			if tok == "" {
				t.Fatal("a malformed template names its bad token")
			}
			return
		}
		out, err := tmpl.Render(func(r *Ref) (any, error) { return r.Text, nil })
		if err != nil {
			t.Fatal(err)
		}
		if full := tmpl.Full(); full != nil {
			out = full.Text
		}
		if out != s {
			t.Fatalf("render(%q) = %q", s, out)
		}
	})
}
