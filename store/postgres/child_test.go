package postgres_test

import (
	"fmt"
	"os"
)

// envChild names the role of a child process of a process test.
const envChild = "STRATUM_POSTGRES_CHILD"

func runChild(role string) int {
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 2
}
