package expr

import "context"

var t0ctx = context.Background()
