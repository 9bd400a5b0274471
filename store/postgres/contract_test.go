package postgres_test

import (
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/storetest"
)

// TestContract runs the store contract suite, tamper cases included, on
// PostgreSQL: each store in a fresh schema; Reopen is a second store (a
// second pool, as another process would have) on the same schema.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return newTamperable(t, pgtest.DSN(t))
	}, storetest.Reopen(func(t *testing.T, s store.Store) store.Store {
		return open(t, s.(*tamperable).dsn, 200*time.Millisecond)
	}))
}
