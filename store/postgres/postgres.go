package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stratum-go/stratum/store"
)

// Options configure a Store. The zero value (or nil) gives defaults.
type Options struct {
	// LockTimeout bounds Update's wait for a run's row lock (and a lease
	// operation's for the lease row); 0 means store.DefaultLockTimeout.
	// Negative is an error.
	LockTimeout time.Duration
	// OnRepair, when set, is called after an Update that kept aside data
	// found after a run's head (which only someone writing the tables
	// directly can leave here: transactions leave no partial writes), as
	// store.Options.OnRepair is.
	OnRepair func(runID string, kept store.Tail)
}

// Store is the PostgreSQL store. Its methods are safe for concurrent use
// by many goroutines, processes and machines sharing one database.
type Store struct {
	pool        *pgxpool.Pool
	lockTimeout time.Duration
	lockSetting string // lock_timeout as PostgreSQL reads it
	onRepair    func(string, store.Tail)
	where       string // the DSN without its password
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Copier   = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
	_ store.Scanner  = (*Store)(nil)
)

// IsDSN reports whether s names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a directory.
func IsDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database dsn names (a URL or key=value string as
// libpq reads them; pool settings such as pool_max_conns are accepted),
// creates or migrates the schema, and returns the store. Tables are made
// in the first schema of the connection's search_path (set it with
// ?search_path=NAME to keep several stores in one database). Errors never
// contain the DSN's password.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	s := &Store{lockTimeout: store.DefaultLockTimeout, where: Redact(dsn)}
	if opts != nil {
		if opts.LockTimeout < 0 {
			return nil, fmt.Errorf("%w: negative lock timeout %s", store.ErrInvalidInput, opts.LockTimeout)
		}
		if opts.LockTimeout > 0 {
			s.lockTimeout = opts.LockTimeout
		}
		s.onRepair = opts.OnRepair
	}
	s.lockSetting = fmt.Sprintf("%dms", max(1, s.lockTimeout.Milliseconds()))
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, parseError(dsn, err)
	}
	pw := cfg.ConnConfig.Password
	bufferReads(&cfg.ConnConfig.Config)
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("open the PostgreSQL store %s: %w", s.where, scrub(err, pw))
	}
	// No Ping: the schema check's query is the first use of the
	// connection, and a round trip less at every command's start
	// (docs/storage.md, "Costs on PostgreSQL").
	if err := s.migrate(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("open the PostgreSQL store %s: %w", s.where, scrub(err, pw))
	}
	return s, nil
}

// Close closes the store's connections.
func (s *Store) Close() { s.pool.Close() }

// String names the database, without the DSN's password.
func (s *Store) String() string { return s.where }

// parseError describes a DSN that cannot be parsed without repeating it:
// the parser's own message can quote the whole string, password included.
func parseError(dsn string, err error) error {
	detail := "its form is postgres://user:password@host:port/database?setting=value"
	var ue *url.Error
	if errors.As(err, &ue) {
		detail = ue.Err.Error()
	}
	return fmt.Errorf("%w: the PostgreSQL DSN %s cannot be parsed: %s", store.ErrInvalidInput, Redact(dsn), scrubText(detail, passwordOf(dsn)))
}

// Redacted is how a password is shown.
const Redacted = "xxxxx"

var kvPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)`)

// Redact returns dsn with its password (in the URL's user information, a
// password= query parameter or a password=... setting) replaced by
// Redacted.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), Redacted)
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", Redacted)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	if IsDSN(dsn) { // an unparseable URL: keep only what cannot be a secret
		if i := strings.Index(dsn, "://"); i >= 0 {
			return dsn[:i+3] + "..."
		}
	}
	return kvPassword.ReplaceAllString(dsn, "${1}"+Redacted)
}

// passwordOf is the password dsn carries, as far as it can be found.
func passwordOf(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		if pw, ok := u.User.Password(); ok {
			return pw
		}
		return u.Query().Get("password")
	}
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if c := strings.Index(rest[:at], ":"); c >= 0 {
				return rest[c+1 : at]
			}
		}
	}
	if m := kvPassword.FindStringSubmatch(dsn); m != nil {
		return strings.Trim(m[2], "'")
	}
	return ""
}

// scrubbed is an error whose text had a password cut out; it still wraps
// the original for errors.Is and errors.As.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// scrub makes sure err's text does not contain pw.
func scrub(err error, pw string) error {
	if err == nil || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return &scrubbed{msg: scrubText(err.Error(), pw), err: err}
}

func scrubText(s, pw string) string {
	if pw == "" {
		return s
	}
	return strings.ReplaceAll(s, pw, Redacted)
}

// pgCode is the SQLSTATE of a server error, "" for other errors.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// SQLSTATEs the store branches on.
const (
	codeUniqueViolation = "23505"
	codeLockNotAvail    = "55P03"
	codeUndefinedTable  = "42P01"
)

// dbError wraps an error of the database for runID: a cancelled caller
// gets its context's error.
func dbError(ctx context.Context, runID, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("run %s: %s: %w", runID, what, ctx.Err())
	}
	return fmt.Errorf("run %s: %s: %w", runID, what, err)
}

func notFound(id string) error { return fmt.Errorf("run %s: %w", id, store.ErrRunNotFound) }
