package ledger

import "github.com/stratum-go/stratum/guard/internal/canon"

func canonLine(m map[string]any) ([]byte, error) { return canon.Marshal(m) }
