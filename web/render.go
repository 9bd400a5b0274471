package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// The pages are html/template files and the script and style are static
// files, all embedded in the binary: nothing is fetched from anywhere
// else, and the pages work offline.

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var assets embed.FS

// pageNames are the pages; each is parsed with the layout and partials.
var pageNames = []string{"runs", "run", "step", "events", "gates", "error"}

type pages struct {
	t map[string]*template.Template
}

var funcs = template.FuncMap{
	"status": statusClass,
	"stamp":  stamp,
	"join":   strings.Join,
	"add":    func(a, b int) int { return a + b },
	"pct":    func(n int) string { return fmt.Sprintf("w%d", (n+5)/10*10) },
}

func loadPages() (*pages, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(templateFiles, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", name, err)
		}
		p.t[name] = t
	}
	return p, nil
}

// render writes a page with status code, after rendering it whole into a
// buffer (a template failure is then a 500, never half a page).
func (s *Server) render(w http.ResponseWriter, code int, name string, pg page) {
	pg.Version = s.opts.Version
	var buf bytes.Buffer
	if err := s.pages.t[name].ExecuteTemplate(&buf, "layout.html", pg); err != nil {
		s.log.Error("render", "page", name, "err", err)
		refuse(w, http.StatusInternalServerError, "The page could not be rendered; the server's log says why.")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// errorPage shows a refusal or failure as a page.
func (s *Server) errorPage(w http.ResponseWriter, code int, title, msg string) {
	s.render(w, code, "error", page{Title: title, Content: struct{ Message string }{msg}})
}

// now is the time pages are rendered at.
func now() time.Time { return time.Now() }
