package store_test

import (
	"testing"
	"time"

	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/storetest"
)

func TestMemoryContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemoryWithTimeout(200 * time.Millisecond) },
		storetest.Reopen(func(t *testing.T, s store.Store) store.Store { return s }))
}
