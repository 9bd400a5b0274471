package engine

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stratum-go/stratum/internal/pgtest"
	"github.com/stratum-go/stratum/store"
	"github.com/stratum-go/stratum/store/postgres"
)

// postgresPrefix marks the scenario tests that TestScenariosOnPostgres
// runs again on a PostgreSQL store.
const postgresPrefix = "TestScenariosOnPostgres/"

// scenarioStore is the store of a scenario test (newHarness): the memory
// store, or a fresh PostgreSQL store for the tests run by
// TestScenariosOnPostgres, and for every scenario test with
// STRATUM_TEST_STORE=postgres.
func scenarioStore(t *testing.T) store.Store {
	t.Helper()
	if !strings.HasPrefix(t.Name(), postgresPrefix) && os.Getenv("STRATUM_TEST_STORE") != "postgres" {
		return store.NewMemory()
	}
	// The subject is the engine's decisions on this store, not the
	// server's durability: commits need not wait for the disk.
	dsn := pgtest.WithParam(pgtest.DSN(t), "synchronous_commit", "off")
	s, err := postgres.Open(context.Background(), dsn, &postgres.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestScenariosOnPostgres runs a representative part of the scenario
// tests (the examples, gates, fanouts, checkpoints, cancel, resume, polls,
// an audit read in pages) on PostgreSQL: the store contract suite holds both stores to the same
// behaviour, and these show the engine gets the same answers from it.
func TestScenariosOnPostgres(t *testing.T) {
	pgtest.DSN(t) // skips (or fails under STRATUM_REQUIRE_POSTGRES=1) without a server
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"ExampleMinimal", TestExampleMinimal},
		{"ExampleCodeReviewAndQuickstart", TestExampleCodeReviewAndQuickstart},
		{"ExampleIterate", TestExampleIterate},
		{"ExampleOnFailBothPaths", TestExampleOnFailBothPaths},
		{"ExampleFlowComposition", TestExampleFlowComposition},
		{"ExampleFiveConstructs", TestExampleFiveConstructs},
		{"FullGateApprove", TestFullGateApprove},
		{"FullGateReviseRoundsAndStaleToken", TestFullGateReviseRoundsAndStaleToken},
		{"FullGateKill", TestFullGateKill},
		{"SubflowGate", TestSubflowGate},
		{"ConsumerFanoutAll", TestConsumerFanoutAll},
		{"ConsumerFanoutRequire", TestConsumerFanoutRequire},
		{"EngineFanoutRetriesAndRequire", TestEngineFanoutRetriesAndRequire},
		{"EngineFanoutResume", TestEngineFanoutResume},
		{"Checkpoints", TestCheckpoints},
		{"Cancel", TestCancel},
		{"ResumeInFreshEngine", TestResumeInFreshEngine},
		{"PollCursor", TestPollCursor},
		{"AuditStreamOrderAndPages", TestAuditStreamOrderAndPages},
	} {
		t.Run(tc.name, tc.run)
	}
}
