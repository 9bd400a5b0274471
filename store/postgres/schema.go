package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// migrations are the schema's versions, in order: migrations[i] takes the
// schema from version i to i+1. A released migration is never edited;
// changes are new entries. docs/storage.md, "PostgreSQL", describes the
// tables.
var migrations = []string{
	// 1: the run's parts as records, with the file store's meaning.
	`
CREATE TABLE stratum_runs (
	run_id      text COLLATE "C" PRIMARY KEY,
	rev         bigint NOT NULL,
	seq         bigint NOT NULL,
	head        text NOT NULL,
	summary     text,
	saved_at    timestamptz NOT NULL,
	state       bytea NOT NULL,
	state_check text NOT NULL
) WITH (fillfactor = 70);

CREATE TABLE stratum_events (
	run_id text COLLATE "C" NOT NULL,
	seq    bigint NOT NULL,
	line   text NOT NULL,
	PRIMARY KEY (run_id, seq)
);

CREATE TABLE stratum_heads (
	run_id      text COLLATE "C" PRIMARY KEY,
	rev         bigint NOT NULL,
	seq         bigint NOT NULL,
	hash        text NOT NULL,
	state_check text NOT NULL,
	summary     text,
	saved_at    timestamptz NOT NULL
) WITH (fillfactor = 70);

CREATE TABLE stratum_leases (
	run_id  text COLLATE "C" PRIMARY KEY,
	owner   text NOT NULL,
	epoch   bigint NOT NULL,
	expires timestamptz NOT NULL
) WITH (fillfactor = 70);

CREATE TABLE stratum_kept (
	run_id text COLLATE "C" NOT NULL,
	name   text NOT NULL,
	data   bytea NOT NULL,
	PRIMARY KEY (run_id, name)
);

CREATE TABLE stratum_watchers (
	run_id      text COLLATE "C" NOT NULL,
	backend_pid integer NOT NULL,
	PRIMARY KEY (run_id, backend_pid)
);
`,
}

// isConnectError reports whether err is a failure to connect.
func isConnectError(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// SchemaVersion is the version of the schema this package writes.
var SchemaVersion = len(migrations)

// ErrSchemaNewer: the database's schema was made by a newer stratum.
var ErrSchemaNewer = errors.New("the database's stratum schema is newer than this program")

// migrate brings the schema to SchemaVersion. The usual case (already
// there) costs one query, sent with the simple protocol: one round trip,
// not a prepare and then an execute. Otherwise it runs in one transaction holding an
// advisory lock keyed by the schema's name, so that processes starting at
// once migrate one after the other, and a failed migration leaves nothing
// half done (PostgreSQL's DDL is transactional).
func (s *Store) migrate(ctx context.Context) error {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM stratum_schema`, pgx.QueryExecModeSimpleProtocol).Scan(&v)
	switch {
	case err == nil && v == SchemaVersion:
		return nil
	case err == nil && v > SchemaVersion:
		return fmt.Errorf("%w: version %d, this program knows %d: upgrade stratum", ErrSchemaNewer, v, SchemaVersion)
	case isConnectError(err):
		return err // the first use of the pool: it says what it could not reach
	case err != nil && pgCode(err) != codeUndefinedTable:
		return fmt.Errorf("read the schema version: %w", err)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('stratum.schema:' || coalesce(current_schema(), ''), 0))`); err != nil {
			return fmt.Errorf("lock the schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS stratum_schema (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
			return fmt.Errorf("create the schema table (is there a schema to create it in? see search_path): %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM stratum_schema`).Scan(&v); err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		if v > SchemaVersion {
			return fmt.Errorf("%w: version %d, this program knows %d: upgrade stratum", ErrSchemaNewer, v, SchemaVersion)
		}
		for ; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate the schema to version %d: %w", v+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO stratum_schema (version) VALUES ($1)`, v+1); err != nil {
				return fmt.Errorf("record schema version %d: %w", v+1, err)
			}
		}
		return nil
	})
}
