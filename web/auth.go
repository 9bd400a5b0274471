package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Who gets in (docs/serve.md, "Security"): every request presents the
// server's token, as a bearer token (MCP clients, scripts), as the
// session cookie a browser got by opening the printed URL once
// (?token=...), and nothing else. The cookie holds a MAC of the token,
// not the token, is HttpOnly and SameSite=Strict: a page of another site
// can neither read it nor make the browser send it. Mutations are also
// refused when the browser says they come from another origin, and every
// request whose Host names a host this server was not told it is (a DNS
// rebinding attack: a name the attacker controls, resolved to this
// machine) is refused before anything else.

// MinTokenLen is the shortest token a person may configure.
const MinTokenLen = 16

// ErrShortToken is returned by New for a token shorter than MinTokenLen.
var ErrShortToken = fmt.Errorf("web: the token must be at least %d characters", MinTokenLen)

// NewToken returns a random token: 32 bytes, hex.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// cookieBase is the session cookie's name; the port is appended, since
// cookies do not tell ports apart and two servers on one machine would
// otherwise overwrite each other's.
const cookieBase = "stratum_session"

// auth checks credentials.
type auth struct {
	tokenSum [32]byte // SHA-256 of the token, compared in constant time
	cookie   string   // the cookie's value: HMAC(token, "cookie")
	hosts    map[string]bool
}

func newAuth(token string, hosts []string) (*auth, error) {
	if len(token) < MinTokenLen {
		return nil, ErrShortToken
	}
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("stratum serve session cookie"))
	a := &auth{tokenSum: sha256.Sum256([]byte(token)), cookie: hex.EncodeToString(mac.Sum(nil)), hosts: map[string]bool{"localhost": true}}
	for _, h := range hosts {
		a.hosts[strings.ToLower(strings.TrimSuffix(h, "."))] = true
	}
	return a, nil
}

func (a *auth) tokenOK(t string) bool {
	sum := sha256.Sum256([]byte(t))
	return subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) == 1
}

func (a *auth) cookieOK(v string) bool {
	return subtle.ConstantTimeCompare([]byte(v), []byte(a.cookie)) == 1
}

// hostOK reports whether a request's Host header names this server: an
// IP address (a rebinding attack needs a name), localhost, or a name the
// person allowed.
func (a *auth) hostOK(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil {
		return true
	}
	return a.hosts[strings.ToLower(host)]
}

func cookieName(r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		return cookieBase + "_" + port
	}
	return cookieBase
}

// errNoCredential is why a request was refused.
var (
	errNoCredential  = errors.New("no credential")
	errBadCredential = errors.New("wrong credential")
)

// check finds the request's credential: a bearer token, or (browserOK)
// the session cookie.
func (a *auth) check(r *http.Request, browserOK bool) error {
	if h := r.Header.Get("Authorization"); h != "" {
		t, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || !a.tokenOK(strings.TrimSpace(t)) {
			return errBadCredential
		}
		return nil
	}
	if !browserOK {
		return errNoCredential
	}
	c, err := r.Cookie(cookieName(r))
	if err != nil {
		return errNoCredential
	}
	if !a.cookieOK(c.Value) {
		return errBadCredential
	}
	return nil
}

// login turns ?token= on a GET into the session cookie and sends the
// browser to the same address without the token (so that it stays out of
// the history, the address bar and any Referer). It reports whether it
// answered the request.
func (a *auth) login(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	if !q.Has("token") || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	if !a.tokenOK(q.Get("token")) {
		refuse(w, http.StatusUnauthorized, "The token in this address is not this server's. Open the address stratum serve printed when it started.")
		return true
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: a.cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	q.Del("token")
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	if u.Path == "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		u.Path = "/"
	}
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
	return true
}

// refuse answers with a short plain-text refusal. The message is fixed
// text of this package: nothing from the request is reflected.
func refuse(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="stratum"`)
	}
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// securityHeaders are set on every answer: a content security policy that
// allows only this server's own script and style files (no inline script,
// no inline style, nothing from elsewhere), no framing, no sniffing, no
// referrer.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}
