package web

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stratum-go/stratum/engine"
)

// What the templates show. Every string here may come from a run (an
// agent's output, a note, a task rendered from a spec written by a model)
// and is untrusted: the templates (html/template) escape each one for
// where it lands, and nothing is marked safe except the HTML those same
// templates produced.

// Limits of what one page shows; the rest is one click away.
const (
	maxShownJSON  = 16 << 10 // one output or result on the run page
	maxShownPatch = 64 << 10 // one patch on the gates page
	maxShownText  = 4 << 10  // a stderr tail, a detail
)

// block is a piece of text shown in a <pre>, cut when long.
type block struct {
	Text  string
	Cut   bool
	Bytes int
}

// Empty reports a block with nothing to show.
func (b block) Empty() bool { return b.Text == "" }

func textBlock(s string, limit int) block {
	b := block{Text: s, Bytes: len(s)}
	if len(s) > limit {
		n := limit
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		b.Text, b.Cut = s[:n], true
	}
	if !utf8.ValidString(b.Text) {
		b.Text = strings.ToValidUTF8(b.Text, "\uFFFD")
	}
	return b
}

// jsonBlock is a value as indented JSON, cut at limit bytes.
func jsonBlock(v engine.Value, limit int) block {
	if !v.Present {
		return block{}
	}
	// Value's own encoding: json.Marshal would write < > & as \u003c
	// and so on, which a person should not have to read (the template
	// escapes for HTML).
	raw, err := v.MarshalJSON()
	if err != nil {
		return textBlock(fmt.Sprintf("(unprintable value: %v)", err), limit)
	}
	var out bytes.Buffer
	if json.Indent(&out, raw, "", "  ") != nil {
		return textBlock(string(raw), limit)
	}
	return textBlock(out.String(), limit)
}

// ago says how long ago t was, coarsely.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", max(int(d/time.Second), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// stamp is a time for a title attribute and a <time> element.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// statusClasses are the statuses with a colour of their own; any other
// value (never expected) is drawn as "unknown".
var statusClasses = map[string]bool{
	"pending": true, "ready": true, "running": true, "waiting_gate": true, "interrupted": true,
	"succeeded": true, "failed": true, "skipped": true, "completed": true, "budget_exhausted": true,
	"cancelled": true, "waiting": true, "none": true, "unreadable": true,
}

// statusClass is the CSS class of a status.
func statusClass(s string) string {
	if statusClasses[s] {
		return "st-" + s
	}
	return "st-unknown"
}

// version is a short digest of a view value: a live page replaces a part
// only when its version changed, and keeps what the person was doing in
// the others.
func version(v any) string {
	h := fnv.New64a()
	_ = json.NewEncoder(h).Encode(v) // view values always encode
	return hex.EncodeToString(h.Sum(nil))
}

// ledgerLine is one kind of spend with its budget.
type ledgerLine struct {
	Name   string
	Spent  string
	Budget string
	// Pct is the share of the budget spent (0-100), -1 without budget.
	Pct int
}

func ledgerLines(l engine.LedgerView) []ledgerLine {
	var out []ledgerLine
	add := func(name string, spent float64, budget *float64, format string) {
		line := ledgerLine{Name: name, Spent: fmt.Sprintf(format, spent), Pct: -1}
		if budget != nil && *budget > 0 {
			line.Budget = fmt.Sprintf(format, *budget)
			line.Pct = min(int(spent / *budget * 100), 100)
		}
		if spent == 0 && line.Budget == "" {
			return
		}
		out = append(out, line)
	}
	var b engine.Ledger
	has := l.Budget != nil
	if has {
		b = *l.Budget
	}
	opt := func(v float64) *float64 {
		if !has || v == 0 {
			return nil
		}
		return &v
	}
	add("usd", l.Spent.USD, opt(b.USD), "%.4g")
	add("tokens", l.Spent.Tokens, opt(b.Tokens), "%.0f")
	add("dispatches", l.Spent.Dispatches, opt(b.Dispatches), "%.0f")
	add("ms", l.Spent.MS, opt(b.MS), "%.0f")
	return out
}

// usageText is an attempt's reported cost on one line.
func usageText(l *engine.Ledger) string {
	if l == nil || l.IsZero() {
		return ""
	}
	var parts []string
	if l.USD != 0 {
		parts = append(parts, fmt.Sprintf("$%.4g", l.USD))
	}
	if l.Tokens != 0 {
		parts = append(parts, fmt.Sprintf("%.0f tokens", l.Tokens))
	}
	if l.MS != 0 {
		parts = append(parts, fmt.Sprintf("%.0f ms", l.MS))
	}
	if l.Dispatches != 0 {
		parts = append(parts, fmt.Sprintf("%.0f dispatches", l.Dispatches))
	}
	return strings.Join(parts, ", ")
}

// flash is the message at the top of a page after a decision.
type flash struct {
	OK      bool
	Message string
	Detail  string
}

// page is what the layout shows around a page's content.
type page struct {
	Title string
	Nav   string
	// Live is the address of the page's live stream; Cursor where it
	// starts.
	Live    string
	Cursor  string
	Flash   *flash
	Version string
	Content any
}
